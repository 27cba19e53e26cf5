package console

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/uuid"
)

// Records built with kmsg as a broker writes them (Kafka 4.0's versions:
// OffsetCommitKey type 1 with OffsetCommitValue v3, GroupMetadataValue
// v3, TxnMetadataKey v0 with TxnMetadataValue v0 and v1) decode to the
// events the page shows.
func TestDecodeInternal(t *testing.T) {
	ordersID, unknownID := uuid.Random(), uuid.Random()
	names := func(id uuid.UUID) (string, bool) { return "orders", id == ordersID }
	commitKey := func(typ int16) []byte {
		k := kmsg.OffsetCommitKey{Version: typ, Group: "g1", Topic: "orders", Partition: 3}
		return k.AppendTo(nil)
	}
	commitValue := func(version int16) []byte {
		v := kmsg.NewOffsetCommitValue()
		v.Version, v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = version, 42, 7, "", 1000
		return v.AppendTo(nil)
	}
	groupKey := (&kmsg.GroupMetadataKey{Version: 2, Group: "g1"}).AppendTo(nil)
	groupValue := func() []byte {
		v := kmsg.NewGroupMetadataValue()
		v.Version, v.ProtocolType, v.Generation = 3, "consumer", 5
		proto, leader := "cooperative-sticky", "m-1"
		v.Protocol, v.Leader = &proto, &leader
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.ClientHost = "m-1", "c", "/127.0.0.1"
		v.Members = append(v.Members, m)
		return v.AppendTo(nil)
	}()
	txnKey := (&kmsg.TxnMetadataKey{Version: 0, TransactionalID: "tx-1"}).AppendTo(nil)
	txnValue := func(version int16, state kmsg.TransactionState) []byte {
		v := kmsg.NewTxnMetadataValue()
		v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = version, 1000, 2, 60000, state
		v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "orders", Partitions: []int32{0, 1}}}
		return v.AppendTo(nil)
	}
	// The KIP-848 and share group records kmsg has no schema for, read
	// with the group coordinator's: ConsumerGroupMetadataKey (type 3,
	// the group id) and its flexible value v0 (the epoch, no tags).
	cgKey := kbin.AppendString(kbin.AppendInt16(nil, 3), "g2")
	cgValue := kbin.AppendUvarint(kbin.AppendInt32(kbin.AppendInt16(nil, 0), 9), 0)
	// ShareGroupMemberMetadataKey (type 10: group, member) and its
	// flexible value v0: rack (null), client id, host, topics, no tags.
	shareMemberKey := kbin.AppendString(kbin.AppendString(kbin.AppendInt16(nil, 10), "sg"), "m-1")
	shareMemberValue := kbin.AppendInt16(nil, 0)
	shareMemberValue = kbin.AppendCompactNullableString(shareMemberValue, nil)
	shareMemberValue = kbin.AppendCompactString(shareMemberValue, "c")
	shareMemberValue = kbin.AppendCompactString(shareMemberValue, "/127.0.0.1")
	shareMemberValue = kbin.AppendCompactArrayLen(shareMemberValue, 1)
	shareMemberValue = kbin.AppendCompactString(shareMemberValue, "orders")
	shareMemberValue = kbin.AppendUvarint(shareMemberValue, 0)
	// ConsumerGroupTargetAssignmentMemberKey (type 7) and its value: one
	// topic id the console knows, one it does not.
	assignKey := kbin.AppendString(kbin.AppendString(kbin.AppendInt16(nil, 7), "g2"), "m-2")
	assignValue := kbin.AppendInt16(nil, 0)
	assignValue = kbin.AppendCompactArrayLen(assignValue, 2)
	for _, tp := range []struct {
		id    uuid.UUID
		parts []int32
	}{{ordersID, []int32{0, 2}}, {unknownID, []int32{1}}} {
		assignValue = kbin.AppendUuid(assignValue, tp.id)
		assignValue = kbin.AppendCompactArrayLen(assignValue, len(tp.parts))
		for _, p := range tp.parts {
			assignValue = kbin.AppendInt32(assignValue, p)
		}
		assignValue = kbin.AppendUvarint(assignValue, 0)
	}
	assignValue = kbin.AppendUvarint(assignValue, 0)

	for _, tc := range []struct {
		name       string
		topic      string
		key, value []byte
		want       InternalEvent
	}{
		{"offset commit v3", offsetsTopic, commitKey(1), commitValue(3),
			InternalEvent{Kind: kindOffsetCommit, Group: "g1", Text: "group g1: orders-3 at 42 (leader epoch 7)"}},
		{"offset commit v1, key type 0", offsetsTopic, commitKey(0), commitValue(1),
			InternalEvent{Kind: kindOffsetCommit, Group: "g1", Text: "group g1: orders-3 at 42"}},
		{"offset deleted", offsetsTopic, commitKey(1), nil,
			InternalEvent{Kind: kindOffsetCommit, Group: "g1", Deleted: true, Text: "group g1: orders-3 deleted"}},
		{"group metadata", offsetsTopic, groupKey, groupValue,
			InternalEvent{Kind: kindGroupMetadata, Group: "g1",
				Text: "group g1: generation 5, protocol type consumer, protocol cooperative-sticky, leader m-1, 1 members"}},
		{"group deleted", offsetsTopic, groupKey, nil,
			InternalEvent{Kind: kindGroupMetadata, Group: "g1", Deleted: true, Text: "group g1 deleted"}},
		{"transaction v0", txnTopic, txnKey, txnValue(0, 1),
			InternalEvent{Kind: kindTxnState, TransactionalID: "tx-1", State: "Ongoing",
				Text: "transactional id tx-1: Ongoing, producer 1000 epoch 2, partitions orders [0 1]"}},
		{"transaction v1 (flexible)", txnTopic, txnKey, txnValue(1, 4),
			InternalEvent{Kind: kindTxnState, TransactionalID: "tx-1", State: "CompleteCommit",
				Text: "transactional id tx-1: CompleteCommit, producer 1000 epoch 2, partitions orders [0 1]"}},
		{"transactional id expired", txnTopic, txnKey, nil,
			InternalEvent{Kind: kindTxnState, TransactionalID: "tx-1", Deleted: true, Text: "transactional id tx-1 deleted"}},
		{"consumer group record", offsetsTopic, cgKey, cgValue,
			InternalEvent{Kind: kindConsumerGroup, Group: "g2", Text: "group g2: ConsumerGroupMetadata, group epoch 9"}},
		{"consumer group record deleted", offsetsTopic, cgKey, nil,
			InternalEvent{Kind: kindConsumerGroup, Group: "g2", Deleted: true, Text: "group g2: ConsumerGroupMetadata deleted"}},
		{"share group member", offsetsTopic, shareMemberKey, shareMemberValue,
			InternalEvent{Kind: kindShareGroup, Group: "sg", Text: "group sg member m-1: ShareGroupMemberMetadata, client c on /127.0.0.1, subscribes to orders"}},
		{"consumer group assignment", offsetsTopic, assignKey, assignValue,
			InternalEvent{Kind: kindConsumerGroup, Group: "g2", Text: "group g2 member m-2: ConsumerGroupTargetAssignmentMember, target orders [0 2]; " + unknownID.String() + " [1]"}},
		{"consumer group record of a newer version", offsetsTopic, cgKey, kbin.AppendInt32(kbin.AppendInt16(nil, 5), 9),
			InternalEvent{Kind: kindOther, Text: "type 3, 12 bytes: ConsumerGroupMetadataValue: unsupported value version 5"}},
		{"unknown type", offsetsTopic, kbin.AppendInt16(nil, 99), kbin.AppendInt16(nil, 4),
			InternalEvent{Kind: kindOther, Text: "type 99, version 4, 4 bytes"}},
		{"unknown key version", txnTopic, kbin.AppendInt16(nil, 1), kbin.AppendInt16(nil, 0),
			InternalEvent{Kind: kindOther, Text: "type 1, version 0, 4 bytes"}},
		{"short key", offsetsTopic, []byte{0}, nil,
			InternalEvent{Kind: kindOther, Text: "a key of 1 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decodeInternal(tc.topic, tc.key, tc.value, names); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A value cut short is an "other" event saying why, never a panic.
func TestDecodeInternalTruncated(t *testing.T) {
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID = 1, 7
	data := v.AppendTo(nil)
	key := (&kmsg.TxnMetadataKey{TransactionalID: "tx"}).AppendTo(nil)
	got := decodeInternal(txnTopic, key, data[:len(data)-3], nil)
	if got.Kind != kindOther || !strings.Contains(got.Text, "kmsg.TxnMetadataValue v1") {
		t.Fatalf("got %+v", got)
	}
}

// appendEvents keeps the newest events in time order, a partition's
// records in offset order within one millisecond.
func TestAppendEvents(t *testing.T) {
	var events []InternalEvent
	for i := range 7 {
		events = appendEvents(events, []InternalEvent{
			{Time: int64(10 - i%2), Topic: offsetsTopic, Partition: 1, Offset: int64(2 * i)},
			{Time: int64(10 - i%2), Topic: offsetsTopic, Partition: 0, Offset: int64(2*i + 1)},
		}, 5)
	}
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%d/%d@%d", e.Time, e.Partition, e.Offset))
	}
	want := "[10/0@13 10/1@0 10/1@4 10/1@8 10/1@12]" // the newest time, partition 0 before 1
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}
