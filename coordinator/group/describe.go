package group

import (
	"fmt"
	"strings"

	"github.com/moldau/moldau/broker/uuid"
)

// RecordSummary is a KIP-848 or share group record of __consumer_offsets
// in words, for tools that show the log as events (the console's
// internal-topics table). Offset commits and classic group metadata have
// kmsg schemas and are not summarised here.
type RecordSummary struct {
	Type   int16
	Name   string // Kafka's record name, e.g. "ConsumerGroupMemberMetadata"
	Share  bool   // a share group's record (else a consumer group's)
	Group  string
	Member string // the member id; the regular expression of type 16
	// Text is the value's fields; "" for a tombstone.
	Text string
}

// recordNames are Kafka's names of the record types DescribeRecord reads.
var recordNames = map[int16]string{
	typeConsumerGroupMetadata:               "ConsumerGroupMetadata",
	typeConsumerGroupPartitionMetadata:      "ConsumerGroupPartitionMetadata",
	typeConsumerGroupMemberMetadata:         "ConsumerGroupMemberMetadata",
	typeConsumerGroupTargetAssignmentMeta:   "ConsumerGroupTargetAssignmentMetadata",
	typeConsumerGroupTargetAssignmentMember: "ConsumerGroupTargetAssignmentMember",
	typeConsumerGroupCurrentMemberAssign:    "ConsumerGroupCurrentMemberAssignment",
	typeShareGroupPartitionMetadata:         "ShareGroupPartitionMetadata",
	typeShareGroupMemberMetadata:            "ShareGroupMemberMetadata",
	typeShareGroupMetadata:                  "ShareGroupMetadata",
	typeShareGroupTargetAssignmentMeta:      "ShareGroupTargetAssignmentMetadata",
	typeShareGroupTargetAssignmentMember:    "ShareGroupTargetAssignmentMember",
	typeShareGroupCurrentMemberAssign:       "ShareGroupCurrentMemberAssignment",
	typeShareGroupStatePartitionMetadata:    "ShareGroupStatePartitionMetadata",
	typeConsumerGroupRegularExpression:      "ConsumerGroupRegularExpression",
}

// DescribeRecord decodes a KIP-848 or share group record (types 3 to 16)
// of __consumer_offsets with the schemas the coordinator writes and
// replays. Topic ids are named by names(id) when it knows them (else in
// Kafka's base64 form). A value of a version this broker does not write,
// or bytes that do not parse, is an error naming the record.
func DescribeRecord(key, value []byte, names func(uuid.UUID) (string, bool)) (RecordSummary, error) {
	pk, err := parseKey(key)
	if err != nil {
		return RecordSummary{}, err
	}
	name, ok := recordNames[pk.typ]
	if !ok {
		return RecordSummary{}, fmt.Errorf("record type %d is not a consumer or share group record", pk.typ)
	}
	s := RecordSummary{Type: pk.typ, Name: name, Share: strings.HasPrefix(name, "Share"), Group: pk.group, Member: pk.member}
	if value == nil {
		return s, nil
	}
	topic := func(id [16]byte) string {
		if names != nil {
			if n, ok := names(uuid.UUID(id)); ok {
				return n
			}
		}
		return uuid.UUID(id).String()
	}
	tps := func(ps []topicPartitions) string {
		if len(ps) == 0 {
			return "none"
		}
		var parts []string
		for _, p := range ps {
			parts = append(parts, fmt.Sprintf("%s %v", topic(p.TopicID), p.Partitions))
		}
		return strings.Join(parts, "; ")
	}
	switch pk.typ {
	case typeConsumerGroupMetadata:
		v, err := decodeConsumerGroupMetadataValue(value)
		if err != nil {
			return s, err
		}
		s.Text = fmt.Sprintf("group epoch %d", v.Epoch)
	case typeConsumerGroupPartitionMetadata:
		v, err := decodeConsumerGroupPartitionMetadataValue(value)
		if err != nil {
			return s, err
		}
		var ts []string
		for _, t := range v.Topics {
			ts = append(ts, fmt.Sprintf("%s (%d partitions)", t.TopicName, t.NumPartitions))
		}
		s.Text = "subscribed topics " + orNone(strings.Join(ts, ", "))
	case typeConsumerGroupMemberMetadata:
		v, err := decodeConsumerGroupMemberMetadataValue(value)
		if err != nil {
			return s, err
		}
		parts := []string{"client " + v.ClientID + " on " + v.ClientHost}
		if v.InstanceID != nil {
			parts = append(parts, "instance "+*v.InstanceID)
		}
		if len(v.SubscribedTopicNames) > 0 {
			parts = append(parts, "subscribes to "+strings.Join(v.SubscribedTopicNames, ", "))
		}
		if v.SubscribedTopicRegex != nil {
			parts = append(parts, "subscribes to /"+*v.SubscribedTopicRegex+"/")
		}
		if v.ServerAssignor != nil {
			parts = append(parts, "assignor "+*v.ServerAssignor)
		}
		if v.ClassicMemberMetadata != nil {
			parts = append(parts, "classic protocol")
		}
		s.Text = strings.Join(parts, ", ")
	case typeConsumerGroupTargetAssignmentMeta, typeShareGroupTargetAssignmentMeta:
		v, err := decodeConsumerGroupTargetAssignmentMetadataValue(value)
		if err != nil {
			return s, err
		}
		s.Text = fmt.Sprintf("target assignment epoch %d", v.AssignmentEpoch)
	case typeConsumerGroupTargetAssignmentMember, typeShareGroupTargetAssignmentMember:
		v, err := decodeConsumerGroupTargetAssignmentMemberValue(value)
		if err != nil {
			return s, err
		}
		s.Text = "target " + tps(v.TopicPartitions)
	case typeConsumerGroupCurrentMemberAssign:
		v, err := decodeConsumerGroupCurrentMemberAssignmentValue(value)
		if err != nil {
			return s, err
		}
		s.Text = fmt.Sprintf("epoch %d (was %d), %s, assigned %s", v.MemberEpoch, v.PreviousMemberEpoch, memberStateName(v.State), tps(v.AssignedPartitions))
		if len(v.PartitionsPendingRevocation) > 0 {
			s.Text += ", revoking " + tps(v.PartitionsPendingRevocation)
		}
	case typeConsumerGroupRegularExpression:
		v, err := decodeConsumerGroupRegularExpressionValue(value)
		if err != nil {
			return s, err
		}
		s.Text = "matches " + orNone(strings.Join(v.Topics, ", "))
	case typeShareGroupPartitionMetadata:
		s.Text = "written by Kafka 4.0 only; not read"
	case typeShareGroupMemberMetadata:
		v, err := decodeShareGroupMemberMetadataValue(value)
		if err != nil {
			return s, err
		}
		s.Text = "client " + v.ClientID + " on " + v.ClientHost + ", subscribes to " + orNone(strings.Join(v.SubscribedTopicNames, ", "))
	case typeShareGroupMetadata:
		v, err := decodeShareGroupMetadataValue(value)
		if err != nil {
			return s, err
		}
		s.Text = fmt.Sprintf("group epoch %d", v.Epoch)
	case typeShareGroupCurrentMemberAssign:
		v, err := decodeShareGroupCurrentMemberAssignmentValue(value)
		if err != nil {
			return s, err
		}
		s.Text = fmt.Sprintf("epoch %d (was %d), %s, assigned %s", v.MemberEpoch, v.PreviousMemberEpoch, memberStateName(v.State), tps(v.AssignedPartitions))
	case typeShareGroupStatePartitionMetadata:
		v, err := decodeShareGroupStatePartitionMetadataValue(value)
		if err != nil {
			return s, err
		}
		infos := func(ts []topicPartitionsInfo) string {
			var parts []string
			for _, t := range ts {
				parts = append(parts, fmt.Sprintf("%s %v", t.TopicName, t.Partitions))
			}
			return orNone(strings.Join(parts, "; "))
		}
		var deleting []string
		for _, t := range v.DeletingTopics {
			deleting = append(deleting, t.TopicName)
		}
		s.Text = "share state initializing " + infos(v.InitializingTopics) + ", initialized " + infos(v.InitializedTopics)
		if len(deleting) > 0 {
			s.Text += ", deleting " + strings.Join(deleting, ", ")
		}
	}
	return s, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// memberStateName names Kafka's MemberState.
func memberStateName(s int8) string {
	switch memberState(s) {
	case memberStable:
		return "stable"
	case memberUnrevokedPartitions:
		return "unrevoked partitions"
	case memberUnreleasedPartitions:
		return "unreleased partitions"
	}
	return fmt.Sprintf("state %d", s)
}
