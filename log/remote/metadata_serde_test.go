package remote

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
)

func metaTestTopicID() uuid.UUID {
	var u uuid.UUID
	for i := range u {
		u[i] = byte(i + 1) // 01 02 .. 10
	}
	return u
}

func metaTestSegmentID() uuid.UUID {
	var u uuid.UUID
	for i := range u {
		u[i] = byte(0xa0 + i)
	}
	return u
}

func metaTestTP() TopicIdPartition {
	return TopicIdPartition{TopicID: metaTestTopicID(), Topic: "ab", Partition: 3}
}

func metaTestSegment() *RemoteLogSegmentMetadata {
	return &RemoteLogSegmentMetadata{
		ID:                  RemoteLogSegmentId{TopicIdPartition: metaTestTP(), ID: metaTestSegmentID()},
		StartOffset:         100,
		EndOffset:           199,
		BrokerID:            1,
		MaxTimestampMs:      5,
		EventTimestampMs:    6,
		SegmentLeaderEpochs: map[int32]int64{2: 100},
		SegmentSizeInBytes:  4096,
		State:               CopySegmentStarted,
	}
}

// the bytes of metaTestTP's TopicIdPartitionEntry
func metaTestTPBytes() []byte {
	b := []byte{0x03, 'a', 'b'}                                          // Name: compact string, length+1
	b = append(b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16) // Id
	b = append(b, 0, 0, 0, 3)                                            // Partition
	return append(b, 0)                                                  // no tagged fields
}

func metaTestSegIDBytes() []byte {
	b := metaTestTPBytes()
	id := metaTestSegmentID()
	b = append(b, id[:]...) // Id
	return append(b, 0)     // no tagged fields
}

func TestRemoteLogMetadataGolden(t *testing.T) {
	seg := metaTestSegment()
	var segBytes []byte
	segBytes = append(segBytes, 0x00, 0x00) // api key 0, version 0 (uvarints)
	segBytes = append(segBytes, metaTestSegIDBytes()...)
	segBytes = append(segBytes, 0, 0, 0, 0, 0, 0, 0, 100) // StartOffset
	segBytes = append(segBytes, 0, 0, 0, 0, 0, 0, 0, 199) // EndOffset
	segBytes = append(segBytes, 0, 0, 0, 1)               // BrokerId
	segBytes = append(segBytes, 0, 0, 0, 0, 0, 0, 0, 5)   // MaxTimestampMs
	segBytes = append(segBytes, 0, 0, 0, 0, 0, 0, 0, 6)   // EventTimestampMs
	segBytes = append(segBytes, 0x02)                     // SegmentLeaderEpochs: 1 entry, length+1
	segBytes = append(segBytes, 0, 0, 0, 2)               //   LeaderEpoch
	segBytes = append(segBytes, 0, 0, 0, 0, 0, 0, 0, 100) //   Offset
	segBytes = append(segBytes, 0)                        //   no tagged fields
	segBytes = append(segBytes, 0, 0, 0x10, 0)            // SegmentSizeInBytes 4096
	segBytes = append(segBytes, 0)                        // CustomMetadata: null
	segBytes = append(segBytes, 0)                        // RemoteLogSegmentState
	segBytes = append(segBytes, 0)                        // no tagged fields (TxnIndexEmpty false)

	upd := &RemoteLogSegmentMetadataUpdate{ID: seg.ID, EventTimestampMs: 7, CustomMetadata: []byte{0xee}, State: CopySegmentFinished, BrokerID: 2}
	var updBytes []byte
	updBytes = append(updBytes, 0x01, 0x00) // api key 1, version 0
	updBytes = append(updBytes, metaTestSegIDBytes()...)
	updBytes = append(updBytes, 0, 0, 0, 2)             // BrokerId
	updBytes = append(updBytes, 0, 0, 0, 0, 0, 0, 0, 7) // EventTimestampMs
	updBytes = append(updBytes, 0x02, 0xee)             // CustomMetadata: 1 byte, length+1
	updBytes = append(updBytes, 1)                      // RemoteLogSegmentState
	updBytes = append(updBytes, 0)                      // no tagged fields

	del := &RemotePartitionDeleteMetadata{TopicIdPartition: metaTestTP(), State: DeletePartitionStarted, EventTimestampMs: 8, BrokerID: 3}
	var delBytes []byte
	delBytes = append(delBytes, 0x02, 0x00) // api key 2, version 0
	delBytes = append(delBytes, metaTestTPBytes()...)
	delBytes = append(delBytes, 0, 0, 0, 3)             // BrokerId
	delBytes = append(delBytes, 0, 0, 0, 0, 0, 0, 0, 8) // EventTimestampMs
	delBytes = append(delBytes, 1)                      // RemotePartitionDeleteState
	delBytes = append(delBytes, 0)                      // no tagged fields

	for _, tc := range []struct {
		name string
		v    any
		want []byte
	}{{"segment", seg, segBytes}, {"update", upd, updBytes}, {"delete", del, delBytes}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeRemoteLogMetadata(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("encoded\n got %x\nwant %x", got, tc.want)
			}
			back, err := DecodeRemoteLogMetadata(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.v) {
				t.Fatalf("decoded %+v, want %+v", back, tc.v)
			}
			for n := range len(tc.want) {
				if _, err := DecodeRemoteLogMetadata(tc.want[:n]); !errors.Is(err, ErrCorruptRemoteLogMetadata) {
					t.Fatalf("truncated to %d: err %v", n, err)
				}
			}
		})
	}
}

func TestRemoteLogMetadataRoundTripTxnIndexEmpty(t *testing.T) {
	seg := metaTestSegment()
	seg.TxnIdxEmpty = true
	seg.CustomMetadata = []byte{}
	seg.SegmentLeaderEpochs = map[int32]int64{2: 100, 3: 150, 7: 190}
	b, err := EncodeRemoteLogMetadata(seg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeRemoteLogMetadata(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, seg) {
		t.Fatalf("decoded %+v, want %+v", back, seg)
	}
}

func TestRemoteLogMetadataDecodeRefuses(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":        nil,
		"snapshot":     {0x03, 0x00},
		"version 2":    {0x00, 0x02},
		"delete v1":    {0x02, 0x01},
		"huge varint":  {0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"huge epochs":  append(append([]byte{0, 0}, metaTestSegIDBytes()...), append(make([]byte, 36), 0xff, 0xff, 0xff, 0x0f)...),
		"trailing":     append(append([]byte{0x02, 0x00}, metaTestTPBytes()...), make([]byte, 15)...),
		"unknown type": {0x09, 0x00},
	} {
		if _, err := DecodeRemoteLogMetadata(b); !errors.Is(err, ErrCorruptRemoteLogMetadata) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if _, err := EncodeRemoteLogMetadata(42); err == nil {
		t.Error("encoded an int")
	}
}

// Version 1 (Kafka 4.2+) differs only by tagged fields: a v0 body with
// the version byte set to 1 decodes the same (its tags are skipped).
func TestRemoteLogMetadataDecodesVersion1(t *testing.T) {
	seg := metaTestSegment()
	b, err := EncodeRemoteLogMetadata(seg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := DecodeRemoteLogMetadata(b)
	if err != nil {
		t.Fatal(err)
	}
	v1 := slices.Clone(b)
	v1[1] = 1
	got, err := DecodeRemoteLogMetadata(v1)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("version 1: %v %+v", err, got)
	}
}

func FuzzDecodeRemoteLogMetadata(f *testing.F) {
	seg := metaTestSegment()
	for _, v := range []any{seg, &RemoteLogSegmentMetadataUpdate{ID: seg.ID, State: 1}, &RemotePartitionDeleteMetadata{TopicIdPartition: metaTestTP()}} {
		b, _ := EncodeRemoteLogMetadata(v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeRemoteLogMetadata(b)
		if err != nil {
			return
		}
		// what decodes re-encodes to something that decodes to the same
		again, err := EncodeRemoteLogMetadata(v)
		if err != nil {
			t.Fatal(err)
		}
		v2, err := DecodeRemoteLogMetadata(again)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("re-decode: %v %+v %+v", err, v, v2)
		}
	})
}

func TestMurmur2KafkaVectors(t *testing.T) {
	// Kafka's UtilsTest.testMurmur2
	for s, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := murmur2([]byte(s)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestMetadataPartition(t *testing.T) {
	// Topic id 0x0102..10: msb 0x0102030405060708, lsb 0x090a0b0c0d0e0f10.
	// Long.hashCode(lsb) = 0x090a0b0c ^ 0x0d0e0f10 = 0x0404041c;
	// Long.hashCode(msb) = 0x01020304 ^ 0x05060708 = 0x0404040c;
	// Objects.hash = 31*(31*(31+0x0404041c)+0x0404040c)+3, in int32.
	tp := metaTestTP()
	h := int32(31 + 0x0404041c)
	h = 31*h + 0x0404040c
	h = 31*h + 3
	var buf = []byte{byte(uint32(h) >> 24), byte(uint32(h) >> 16), byte(uint32(h) >> 8), byte(uint32(h))}
	if uint32(h) != 0x8f905ef2 {
		t.Fatalf("Objects.hash = %08x, want 8f905ef2", uint32(h))
	}
	// murmur2(8f 90 5e f2) & 0x7fffffff, mod 50
	const want = 37
	if int32(int(murmur2(buf)&0x7fffffff)%50) != want {
		t.Fatal("murmur2 of the hash changed")
	}
	if got := MetadataPartition(tp, 50); got != want {
		t.Fatalf("MetadataPartition = %d, want %d", got, want)
	}
	other := tp
	other.Topic = "renamed"
	if MetadataPartition(other, 50) != want {
		t.Fatal("partition depends on the topic name")
	}
	t.Logf("hash input %08x → partition %d of 50", uint32(h), want)
}
