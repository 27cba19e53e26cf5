package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime"
)

// Record types of __consumer_offsets: the version field at the start of a
// record's key says what the record is (Kafka's CoordinatorRecordType; the
// key schemas in group-coordinator/src/main/resources/common/message).
// Types 9 to 15 are share groups' (records_share.go).
const (
	typeOffsetCommitV0                      int16 = 0 // OffsetCommitKey, written by Kafka before 0.9
	typeOffsetCommit                        int16 = 1 // OffsetCommitKey
	typeGroupMetadata                       int16 = 2 // GroupMetadataKey (classic groups)
	typeConsumerGroupMetadata               int16 = 3 // ConsumerGroupMetadataKey: the group epoch
	typeConsumerGroupPartitionMetadata      int16 = 4 // ConsumerGroupPartitionMetadataKey: subscribed topics
	typeConsumerGroupMemberMetadata         int16 = 5 // ConsumerGroupMemberMetadataKey: a member's subscription
	typeConsumerGroupTargetAssignmentMeta   int16 = 6 // ConsumerGroupTargetAssignmentMetadataKey
	typeConsumerGroupTargetAssignmentMember int16 = 7 // ConsumerGroupTargetAssignmentMemberKey
	typeConsumerGroupCurrentMemberAssign    int16 = 8 // ConsumerGroupCurrentMemberAssignmentKey
	typeShareGroupPartitionMetadata         int16 = 9 // Kafka 4.0 only: skipped
	typeShareGroupMemberMetadata            int16 = 10
	typeShareGroupMetadata                  int16 = 11
	typeShareGroupTargetAssignmentMeta      int16 = 12
	typeShareGroupTargetAssignmentMember    int16 = 13
	typeShareGroupCurrentMemberAssign       int16 = 14
	typeShareGroupStatePartitionMetadata    int16 = 15
	typeConsumerGroupRegularExpression      int16 = 16
)

// Value versions Kafka 4.0 writes: OffsetCommitValue v3 (v1 when an
// expire timestamp is set, by OffsetCommit v2-v4 with a retention time),
// GroupMetadataValue v3, every KIP-848 value v0.
const (
	offsetCommitValueVersion  int16 = 3
	groupMetadataValueVersion int16 = 3
)

// ---- keys ----

func appendKeyType(typ int16) []byte { return kbin.AppendInt16(make([]byte, 0, 64), typ) }

func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: typeOffsetCommit, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func groupMetadataKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: typeGroupMetadata, Group: group}
	return k.AppendTo(nil)
}

// groupKey is the key of the KIP-848 records keyed by the group alone.
func groupKey(typ int16, group string) []byte {
	return kbin.AppendString(appendKeyType(typ), group)
}

// groupMemberKey is the key of the KIP-848 records keyed by group and
// member (or, for the regular expression record, group and expression).
func groupMemberKey(typ int16, group, member string) []byte {
	b := kbin.AppendString(appendKeyType(typ), group)
	return kbin.AppendString(b, member)
}

// parsedKey is a decoded key of any record type.
type parsedKey struct {
	typ       int16
	group     string
	topic     string // offset commits
	partition int32  // offset commits
	member    string // member records; the regex of a regex record
}

func parseKey(key []byte) (parsedKey, error) {
	b := kbin.Reader{Src: key}
	pk := parsedKey{typ: b.Int16()}
	switch pk.typ {
	case typeOffsetCommitV0, typeOffsetCommit:
		pk.group, pk.topic, pk.partition = b.String(), b.String(), b.Int32()
	case typeGroupMetadata, typeConsumerGroupMetadata, typeConsumerGroupPartitionMetadata, typeConsumerGroupTargetAssignmentMeta,
		typeShareGroupPartitionMetadata, typeShareGroupMetadata, typeShareGroupTargetAssignmentMeta, typeShareGroupStatePartitionMetadata:
		pk.group = b.String()
	case typeConsumerGroupMemberMetadata, typeConsumerGroupTargetAssignmentMember, typeConsumerGroupCurrentMemberAssign, typeConsumerGroupRegularExpression,
		typeShareGroupMemberMetadata, typeShareGroupTargetAssignmentMember, typeShareGroupCurrentMemberAssign:
		pk.group, pk.member = b.String(), b.String()
	default:
		return pk, fmt.Errorf("unknown record type %d in __consumer_offsets", pk.typ)
	}
	if err := b.Complete(); err != nil {
		return pk, fmt.Errorf("record key of type %d: %w", pk.typ, err)
	}
	return pk, nil
}

// ---- offsets and classic groups (kmsg's schemas) ----

// OffsetAndMetadata is one committed offset (Kafka's OffsetAndMetadata).
type OffsetAndMetadata struct {
	RecordOffset    int64 // offset of the record in __consumer_offsets
	Offset          int64
	LeaderEpoch     int32 // -1: none
	Metadata        string
	CommitTimestamp int64 // ms
	ExpireTimestamp int64 // ms; -1: none (only OffsetCommit v2-v4 set it)
}

func offsetCommitRecord(group, topic string, partition int32, o OffsetAndMetadata) runtime.Record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueVersion
	if o.ExpireTimestamp >= 0 {
		v.Version = 1
	}
	v.Offset, v.LeaderEpoch, v.Metadata = o.Offset, o.LeaderEpoch, o.Metadata
	v.CommitTimestamp, v.ExpireTimestamp = o.CommitTimestamp, o.ExpireTimestamp
	return runtime.Record{Key: offsetCommitKey(group, topic, partition), Value: v.AppendTo(nil)}
}

func offsetCommitTombstone(group, topic string, partition int32) runtime.Record {
	return runtime.Record{Key: offsetCommitKey(group, topic, partition)}
}

func parseOffsetCommitValue(recordOffset int64, value []byte) (OffsetAndMetadata, error) {
	v := kmsg.NewOffsetCommitValue()
	if err := v.ReadFrom(value); err != nil {
		return OffsetAndMetadata{}, fmt.Errorf("OffsetCommitValue: %w", err)
	}
	o := OffsetAndMetadata{RecordOffset: recordOffset, Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: -1}
	if v.Version >= 3 {
		o.LeaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 {
		o.ExpireTimestamp = v.ExpireTimestamp
	}
	return o, nil
}

// groupMetadataRecord is Kafka's newGroupMetadataRecord: the classic group
// with every member's subscription (its metadata for the selected
// protocol) and the given assignment.
func groupMetadataRecord(g *ClassicGroup, assignment map[string][]byte) runtime.Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generationID
	v.Protocol = optString(g.protocolName)
	v.Leader = optString(g.leaderID)
	v.CurrentStateTimestamp = g.currentStateTimestamp
	for _, m := range g.orderedMembers() {
		mm := kmsg.NewGroupMetadataValueMember()
		mm.MemberID = m.memberID
		mm.InstanceID = m.instanceID
		mm.ClientID, mm.ClientHost = m.clientID, m.clientHost
		mm.RebalanceTimeoutMillis, mm.SessionTimeoutMillis = m.rebalanceTimeoutMs, m.sessionTimeoutMs
		mm.Subscription = m.metadata(g.protocolName)
		if mm.Subscription == nil {
			mm.Subscription = []byte{}
		}
		mm.Assignment = assignment[m.memberID]
		if mm.Assignment == nil {
			mm.Assignment = []byte{}
		}
		v.Members = append(v.Members, mm)
	}
	return runtime.Record{Key: groupMetadataKey(g.groupID), Value: v.AppendTo(nil)}
}

// emptyGroupMetadataRecord is Kafka's newEmptyGroupMetadataRecord.
func emptyGroupMetadataRecord(g *ClassicGroup) runtime.Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = 0
	v.CurrentStateTimestamp = g.currentStateTimestamp
	return runtime.Record{Key: groupMetadataKey(g.groupID), Value: v.AppendTo(nil)}
}

func groupMetadataTombstone(group string) runtime.Record {
	return runtime.Record{Key: groupMetadataKey(group)}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func strOr(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}
