package group

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// unhex decodes hex with spaces (the bytes are written out field by field,
// from the JSON schemas in Kafka's group-coordinator).
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var uuid1 = [16]byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10}

const uuid1Hex = "0102030405060708090a0b0c0d0e0f10"

func TestRecordKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want string
		key  parsedKey
	}{
		{"OffsetCommitKey v1", offsetCommitKey("g", "t", 7), "0001 0001 67 0001 74 00000007", parsedKey{typ: 1, group: "g", topic: "t", partition: 7}},
		{"GroupMetadataKey", groupMetadataKey("g"), "0002 0001 67", parsedKey{typ: 2, group: "g"}},
		{"ConsumerGroupMetadataKey", groupKey(typeConsumerGroupMetadata, "g"), "0003 0001 67", parsedKey{typ: 3, group: "g"}},
		{"ConsumerGroupMemberMetadataKey", groupMemberKey(typeConsumerGroupMemberMetadata, "g", "m"), "0005 0001 67 0001 6d", parsedKey{typ: 5, group: "g", member: "m"}},
		{"ConsumerGroupCurrentMemberAssignmentKey", groupMemberKey(typeConsumerGroupCurrentMemberAssign, "g", "m"), "0008 0001 67 0001 6d", parsedKey{typ: 8, group: "g", member: "m"}},
		{"ConsumerGroupRegularExpressionKey", groupMemberKey(typeConsumerGroupRegularExpression, "g", "a.*"), "0010 0001 67 0003 612e2a", parsedKey{typ: 16, group: "g", member: "a.*"}},
	} {
		if want := unhex(t, tc.want); string(tc.got) != string(want) {
			t.Errorf("%s: % x, want % x", tc.name, tc.got, want)
		}
		k, err := parseKey(tc.got)
		if err != nil || k != tc.key {
			t.Errorf("%s: parsed %+v, %v", tc.name, k, err)
		}
	}
	if _, err := parseKey(unhex(t, "0011 0001 67")); err == nil {
		t.Error("unknown record type 17 parsed")
	}
	if k, err := parseKey(unhex(t, "000a 0001 67 0001 6d")); err != nil || k.typ != 10 {
		t.Errorf("share group record: %+v, %v", k, err)
	}
}

func TestOffsetCommitValue(t *testing.T) {
	o := OffsetAndMetadata{Offset: 42, LeaderEpoch: 3, Metadata: "md", CommitTimestamp: 1000, ExpireTimestamp: -1}
	r := offsetCommitRecord("g", "t", 0, o)
	// version 3: offset int64, leaderEpoch int32, metadata string,
	// commitTimestamp int64.
	want := unhex(t, "0003 000000000000002a 00000003 0002 6d64 00000000000003e8")
	if string(r.Value) != string(want) {
		t.Fatalf("value % x, want % x", r.Value, want)
	}
	got, err := parseOffsetCommitValue(9, r.Value)
	o.RecordOffset = 9
	if err != nil || got != o {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	// With an expire timestamp (OffsetCommit v2-v4): version 1.
	o.ExpireTimestamp = 5000
	r = offsetCommitRecord("g", "t", 0, o)
	want = unhex(t, "0001 000000000000002a 0002 6d64 00000000000003e8 0000000000001388")
	if string(r.Value) != string(want) {
		t.Fatalf("v1 value % x, want % x", r.Value, want)
	}
	got, _ = parseOffsetCommitValue(9, r.Value)
	if got.ExpireTimestamp != 5000 || got.LeaderEpoch != -1 {
		t.Fatalf("v1 parsed %+v", got)
	}
}

func TestConsumerGroupValues(t *testing.T) {
	t.Run("ConsumerGroupMetadataValue", func(t *testing.T) {
		v := consumerGroupMetadataValue{Epoch: 5}
		b := v.encode()
		if want := unhex(t, "0000 00000005 00"); string(b) != string(want) {
			t.Fatalf("% x", b)
		}
		got, err := decodeConsumerGroupMetadataValue(b)
		if err != nil || got != v {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("ConsumerGroupMemberMetadataValue", func(t *testing.T) {
		v := consumerGroupMemberMetadataValue{
			RackID: ptr("r"), ClientID: "c", ClientHost: "/h", SubscribedTopicNames: []string{"t"},
			RebalanceTimeoutMs: 1000, ServerAssignor: ptr("uniform"),
			ClassicMemberMetadata: &classicMemberMetadata{SessionTimeoutMs: 45000, SupportedProtocols: []classicProtocol{{Name: "range", Metadata: []byte{0xaa}}}},
		}
		b := v.encode()
		// InstanceId null, RackId "r", ClientId "c", ClientHost "/h",
		// SubscribedTopicNames ["t"], SubscribedTopicRegex null,
		// RebalanceTimeoutMs 1000, ServerAssignor "uniform", then one
		// tagged field: tag 0, 15 bytes of ClassicMemberMetadata.
		want := unhex(t, "0000 00 0272 0263 032f68 02 0274 00 000003e8 08756e69666f726d"+
			" 01 00 0f 0000afc8 02 0672616e6765 02aa 00 00")
		if string(b) != string(want) {
			t.Fatalf("% x\nwant % x", b, want)
		}
		got, err := decodeConsumerGroupMemberMetadataValue(b)
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Fatalf("%+v %v", got, err)
		}
		// Without the tagged field.
		v.ClassicMemberMetadata, v.InstanceID, v.SubscribedTopicRegex = nil, ptr("i"), ptr("t.*")
		got, err = decodeConsumerGroupMemberMetadataValue(v.encode())
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("ConsumerGroupCurrentMemberAssignmentValue", func(t *testing.T) {
		v := consumerGroupCurrentMemberAssignmentValue{MemberEpoch: 2, PreviousMemberEpoch: 1, State: 0,
			AssignedPartitions: []topicPartitions{{TopicID: uuid1, Partitions: []int32{0, 1}}}}
		b := v.encode()
		want := unhex(t, "0000 00000002 00000001 00 02 "+uuid1Hex+" 03 00000000 00000001 00 01 00")
		if string(b) != string(want) {
			t.Fatalf("% x\nwant % x", b, want)
		}
		got, err := decodeConsumerGroupCurrentMemberAssignmentValue(b)
		v.PartitionsPendingRevocation = []topicPartitions{}
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("ConsumerGroupTargetAssignmentMemberValue", func(t *testing.T) {
		v := consumerGroupTargetAssignmentMemberValue{TopicPartitions: []topicPartitions{{TopicID: uuid1, Partitions: []int32{4}}}}
		b := v.encode()
		if want := unhex(t, "0000 02 "+uuid1Hex+" 02 00000004 00 00"); string(b) != string(want) {
			t.Fatalf("% x", b)
		}
		got, err := decodeConsumerGroupTargetAssignmentMemberValue(b)
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("ConsumerGroupTargetAssignmentMetadataValue", func(t *testing.T) {
		v := consumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 7}
		got, err := decodeConsumerGroupTargetAssignmentMetadataValue(v.encode())
		if string(v.encode()) != string(unhex(t, "0000 00000007 00")) || err != nil || got != v {
			t.Fatalf("% x %+v %v", v.encode(), got, err)
		}
	})
	t.Run("ConsumerGroupPartitionMetadataValue", func(t *testing.T) {
		v := consumerGroupPartitionMetadataValue{Topics: []topicMetadataRecord{{TopicID: uuid1, TopicName: "t", NumPartitions: 3}}}
		b := v.encode()
		if want := unhex(t, "0000 02 "+uuid1Hex+" 0274 00000003 01 00 00"); string(b) != string(want) {
			t.Fatalf("% x", b)
		}
		got, err := decodeConsumerGroupPartitionMetadataValue(b)
		if err != nil || len(got.Topics) != 1 || got.Topics[0].TopicName != "t" || got.Topics[0].NumPartitions != 3 || got.Topics[0].TopicID != uuid1 {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("ConsumerGroupRegularExpressionValue", func(t *testing.T) {
		v := consumerGroupRegularExpressionValue{Topics: []string{"a", "b"}, Version: 3, Timestamp: 1000}
		b := v.encode()
		if want := unhex(t, "0000 03 0261 0262 0000000000000003 00000000000003e8 00"); string(b) != string(want) {
			t.Fatalf("% x", b)
		}
		got, err := decodeConsumerGroupRegularExpressionValue(b)
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("unknown tags are skipped, bad bytes refused", func(t *testing.T) {
		// Epoch 5 followed by one unknown tag (tag 9, 2 bytes).
		got, err := decodeConsumerGroupMetadataValue(unhex(t, "0000 00000005 01 09 02 ffff"))
		if err != nil || got.Epoch != 5 {
			t.Fatalf("%+v %v", got, err)
		}
		if _, err := decodeConsumerGroupMetadataValue(unhex(t, "0000 000000")); err == nil {
			t.Fatal("truncated value decoded")
		}
		if _, err := decodeConsumerGroupMetadataValue(unhex(t, "0001 00000005 00")); err == nil {
			t.Fatal("unknown version decoded")
		}
		if _, err := decodeConsumerGroupCurrentMemberAssignmentValue(unhex(t, "0000 00000002 00000001 00 ff")); err == nil {
			t.Fatal("garbage array decoded")
		}
	})
}

func TestPartitionFor(t *testing.T) {
	// Java: "foo".hashCode() == 101574, "group-1".hashCode() == 293427299 (checked with java),
	// and a string whose hash is Integer.MIN_VALUE maps to partition 0.
	for _, tc := range []struct {
		key  string
		hash int32
	}{{"foo", 101574}, {"group-1", 293427299}, {"", 0}, {"é", 233}, {"😀", 1772899}} {
		if h := javaStringHashCode(tc.key); h != tc.hash {
			t.Errorf("hashCode(%q) = %d, want %d", tc.key, h, tc.hash)
		}
	}
	if p := PartitionFor("foo", 50); p != 101574%50 {
		t.Errorf("PartitionFor(foo) = %d", p)
	}
	// "polygenelubricants".hashCode() == Integer.MIN_VALUE.
	if h := javaStringHashCode("polygenelubricants"); h != -2147483648 {
		t.Fatalf("hashCode(polygenelubricants) = %d", h)
	}
	if p := PartitionFor("polygenelubricants", 50); p != 0 {
		t.Errorf("PartitionFor of MIN_VALUE = %d, want 0 (Kafka's Utils.abs)", p)
	}
	// Negative hashes: abs. "Aaaaaaaaaaaaaa".hashCode() == -565708544.
	if h := javaStringHashCode("Aaaaaaaaaaaaaa"); h != -565708544 {
		t.Fatalf("hashCode = %d", h)
	}
	if p := PartitionFor("Aaaaaaaaaaaaaa", 50); p != 565708544%50 {
		t.Errorf("negative hash: partition %d", p)
	}
}
