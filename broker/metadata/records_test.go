package metadata

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
)

// Bytes checked by hand against Kafka's schema and MetadataRecordSerde:
// frame version 1, api key 2, version 0, compact string "foo" (length+1),
// 16-byte uuid, empty tagged fields.
func TestTopicRecordBytes(t *testing.T) {
	id := uuid.UUID{0: 0xAA, 15: 0xBB}
	got := Encode(&TopicRecord{Name: "foo", TopicID: id})
	want := append([]byte{1, 2, 0, 4, 'f', 'o', 'o'}, id[:]...)
	want = append(want, 0)
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x\nwant % x", got, want)
	}
}

// A PartitionChangeRecord writes only what changed, as tagged fields in tag
// order: ISR (tag 0) and leader (tag 1) here.
func TestPartitionChangeRecordBytes(t *testing.T) {
	id := uuid.UUID{15: 7}
	r := NewPartitionChangeRecord(id, 3)
	r.ISR = []int32{1, 2}
	r.Leader = 2
	got := Encode(r)
	want := []byte{1, 5, 0, 0, 0, 0, 3}
	want = append(want, id[:]...)
	want = append(want,
		2,                               // two tagged fields
		0, 9, 3, 0, 0, 0, 1, 0, 0, 0, 2, // tag 0, 9 bytes: compact array of 2, 1, 2
		1, 4, 0, 0, 0, 2, // tag 1, 4 bytes: leader 2
	)
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x\nwant % x", got, want)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	id := uuid.Random()
	recs := []Record{
		&TopicRecord{Name: "orders", TopicID: id},
		&PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, RemovingReplicas: []int32{}, AddingReplicas: []int32{}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9, LeaderRecoveryState: 1},
		&PartitionChangeRecord{PartitionID: 2, TopicID: id, ISR: []int32{3}, Leader: -1, Replicas: []int32{3, 1}, LeaderRecoveryState: -1},
		&ConfigRecord{ResourceType: TopicResource, ResourceName: "orders", Name: "retention.ms", Value: ptr("1000")},
		&ConfigRecord{ResourceType: BrokerResource, ResourceName: "", Name: "log.retention.ms", Value: nil},
		&RemoveTopicRecord{TopicID: id},
		&ProducerIdsRecord{BrokerID: 2, BrokerEpoch: 77, NextProducerID: 5000},
		&RegisterBrokerRecord{BrokerID: 3, IncarnationID: uuid.Random(), BrokerEpoch: 12,
			EndPoints: []BrokerEndpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}},
			Features:  []BrokerFeature{{Name: "metadata.version", MinSupportedVersion: 7, MaxSupportedVersion: 25}},
			Rack:      ptr("r1"), Fenced: true, InControlledShutdown: false},
		&UnregisterBrokerRecord{BrokerID: 3, BrokerEpoch: 12},
		&RegisterControllerRecord{ControllerID: 1, IncarnationID: uuid.Random(),
			EndPoints: []BrokerEndpoint{{Name: "CONTROLLER", Host: "c1", Port: 9093}},
			Features:  []BrokerFeature{{Name: "metadata.version", MinSupportedVersion: 7, MaxSupportedVersion: 25}}},
		&FenceBrokerRecord{ID: 1, Epoch: 2},
		&UnfenceBrokerRecord{ID: 1, Epoch: 2},
		&BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 2, Fenced: -1, InControlledShutdown: 1},
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 25},
		&NoOpRecord{},
		&ClientQuotaRecord{Entity: []QuotaEntityData{{EntityType: QuotaUser, EntityName: ptr("alice")}, {EntityType: QuotaClientID}}, Key: "controller_mutation_rate", Value: 2.5},
		&ClientQuotaRecord{Entity: []QuotaEntityData{{EntityType: QuotaIP, EntityName: ptr("10.0.0.1")}}, Key: "connection_creation_rate", Remove: true},
	}
	for _, r := range recs {
		b := Encode(r)
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("%T: %v", r, err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("%T round trip:\n got %+v\nwant %+v", r, back, r)
		}
		// Every prefix is an error, never a panic.
		for i := 0; i < len(b); i++ {
			if _, err := Decode(b[:i]); err == nil && i < len(b) {
				if _, ok := r.(*NoOpRecord); !ok || i < 4 {
					t.Fatalf("%T: prefix of %d/%d bytes decoded", r, i, len(b))
				}
			}
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"frame 0":       {0, 2, 0},
		"unknown type":  {1, 99, 0, 0},
		"newer version": {1, 2, 5, 0},
		"garbage after": append(Encode(&NoOpRecord{}), 0),
		"huge array":    {1, 3, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x0f},
	} {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(&TopicRecord{Name: "x", TopicID: uuid.Random()}))
	f.Add(Encode(&RegisterBrokerRecord{BrokerID: 1, EndPoints: []BrokerEndpoint{{Name: "A"}}}))
	f.Add(Encode(NewPartitionChangeRecord(uuid.Random(), 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes and decodes to the same record.
		b2 := encodeAt(r, decodedVersion(b))
		r2, err := Decode(b2)
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("re-decode of %T: %v", r, err)
		}
	})
}

func decodedVersion(b []byte) int16 {
	r := newReader(b)
	r.uvarint()
	r.uvarint()
	return int16(r.uvarint())
}

func encodeAt(rec Record, v int16) []byte {
	w := &writer{}
	w.uvarint(frameVersion)
	w.uvarint(uint32(rec.Type()))
	w.uvarint(uint32(v))
	rec.encode(w, v)
	return w.b
}
