package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/moldau/moldau/coordinator/runtime"
)

// The KIP-848 record values, encoded as Kafka's group-coordinator JSON
// schemas say (kmsg does not have them): an int16 version (0), then the
// fields in flexible encoding (KIP-482: compact strings, arrays and bytes
// with uvarint length + 1, 0 for null), each struct ending with its tagged
// fields (a uvarint count, then tag, size, bytes). Unknown tags are skipped
// on read, as Kafka does.

// valueVersion is the version of every KIP-848 value Kafka 4.0 writes.
const valueVersion int16 = 0

// ConsumerGroupMetadataValue: the group epoch.
type consumerGroupMetadataValue struct {
	Epoch int32
}

// ConsumerGroupPartitionMetadataValue: the metadata of the topics the
// group subscribes to, as of the last target assignment.
type consumerGroupPartitionMetadataValue struct {
	Topics []topicMetadataRecord
}

type topicMetadataRecord struct {
	TopicID       [16]byte
	TopicName     string
	NumPartitions int32
	// PartitionMetadata: partition racks; not used after Kafka 4.0, and
	// Moldau writes it empty as Kafka does when no rack is known.
	PartitionMetadata []partitionRacks
}

type partitionRacks struct {
	Partition int32
	Racks     []string
}

// ConsumerGroupMemberMetadataValue: a member's subscription.
type consumerGroupMemberMetadataValue struct {
	InstanceID           *string
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	RebalanceTimeoutMs   int32 // default -1
	ServerAssignor       *string
	// ClassicMemberMetadata (tag 0) is set for members using the classic
	// protocol in a consumer group.
	ClassicMemberMetadata *classicMemberMetadata
}

type classicMemberMetadata struct {
	SessionTimeoutMs   int32
	SupportedProtocols []classicProtocol
}

type classicProtocol struct {
	Name     string
	Metadata []byte
}

// ConsumerGroupTargetAssignmentMetadataValue: the epoch of the target
// assignment.
type consumerGroupTargetAssignmentMetadataValue struct {
	AssignmentEpoch int32
}

// topicPartitions is a topic ID and partitions, as the assignment records
// store them.
type topicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// ConsumerGroupTargetAssignmentMemberValue: a member's target assignment.
type consumerGroupTargetAssignmentMemberValue struct {
	TopicPartitions []topicPartitions
}

// ConsumerGroupCurrentMemberAssignmentValue: a member's current epoch,
// state and assignment.
type consumerGroupCurrentMemberAssignmentValue struct {
	MemberEpoch                 int32
	PreviousMemberEpoch         int32
	State                       int8
	AssignedPartitions          []topicPartitions
	PartitionsPendingRevocation []topicPartitions
}

// ConsumerGroupRegularExpressionValue: the topics a regular expression
// subscription resolved to (Kafka 4.0, record type 16).
type consumerGroupRegularExpressionValue struct {
	Topics    []string
	Version   int64 // metadata image version the regex was resolved at
	Timestamp int64 // ms
}

// ---- encoding ----

func newValue() []byte { return kbin.AppendInt16(make([]byte, 0, 64), valueVersion) }

func appendNoTags(b []byte) []byte { return kbin.AppendUvarint(b, 0) }

func appendCompactStrings(b []byte, ss []string) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ss))
	for _, s := range ss {
		b = kbin.AppendCompactString(b, s)
	}
	return b
}

func appendCompactInt32s(b []byte, vs []int32) []byte {
	b = kbin.AppendCompactArrayLen(b, len(vs))
	for _, v := range vs {
		b = kbin.AppendInt32(b, v)
	}
	return b
}

func appendTopicPartitions(b []byte, tps []topicPartitions) []byte {
	b = kbin.AppendCompactArrayLen(b, len(tps))
	for _, tp := range tps {
		b = kbin.AppendUuid(b, tp.TopicID)
		b = appendCompactInt32s(b, tp.Partitions)
		b = appendNoTags(b)
	}
	return b
}

func (v *consumerGroupMetadataValue) encode() []byte {
	return appendNoTags(kbin.AppendInt32(newValue(), v.Epoch))
}

func (v *consumerGroupPartitionMetadataValue) encode() []byte {
	b := kbin.AppendCompactArrayLen(newValue(), len(v.Topics))
	for _, t := range v.Topics {
		b = kbin.AppendUuid(b, t.TopicID)
		b = kbin.AppendCompactString(b, t.TopicName)
		b = kbin.AppendInt32(b, t.NumPartitions)
		b = kbin.AppendCompactArrayLen(b, len(t.PartitionMetadata))
		for _, p := range t.PartitionMetadata {
			b = kbin.AppendInt32(b, p.Partition)
			b = appendCompactStrings(b, p.Racks)
			b = appendNoTags(b)
		}
		b = appendNoTags(b)
	}
	return appendNoTags(b)
}

func (v *consumerGroupMemberMetadataValue) encode() []byte {
	b := newValue()
	b = kbin.AppendCompactNullableString(b, v.InstanceID)
	b = kbin.AppendCompactNullableString(b, v.RackID)
	b = kbin.AppendCompactString(b, v.ClientID)
	b = kbin.AppendCompactString(b, v.ClientHost)
	b = appendCompactStrings(b, v.SubscribedTopicNames)
	b = kbin.AppendCompactNullableString(b, v.SubscribedTopicRegex)
	b = kbin.AppendInt32(b, v.RebalanceTimeoutMs)
	b = kbin.AppendCompactNullableString(b, v.ServerAssignor)
	if v.ClassicMemberMetadata == nil {
		return appendNoTags(b)
	}
	c := v.ClassicMemberMetadata
	var t []byte
	t = kbin.AppendInt32(t, c.SessionTimeoutMs)
	t = kbin.AppendCompactArrayLen(t, len(c.SupportedProtocols))
	for _, p := range c.SupportedProtocols {
		t = kbin.AppendCompactString(t, p.Name)
		t = kbin.AppendCompactBytes(t, p.Metadata)
		t = appendNoTags(t)
	}
	t = appendNoTags(t)
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0: ClassicMemberMetadata
	b = kbin.AppendUvarint(b, uint32(len(t)))
	return append(b, t...)
}

func (v *consumerGroupTargetAssignmentMetadataValue) encode() []byte {
	return appendNoTags(kbin.AppendInt32(newValue(), v.AssignmentEpoch))
}

func (v *consumerGroupTargetAssignmentMemberValue) encode() []byte {
	return appendNoTags(appendTopicPartitions(newValue(), v.TopicPartitions))
}

func (v *consumerGroupCurrentMemberAssignmentValue) encode() []byte {
	b := kbin.AppendInt32(newValue(), v.MemberEpoch)
	b = kbin.AppendInt32(b, v.PreviousMemberEpoch)
	b = kbin.AppendInt8(b, v.State)
	b = appendTopicPartitions(b, v.AssignedPartitions)
	b = appendTopicPartitions(b, v.PartitionsPendingRevocation)
	return appendNoTags(b)
}

func (v *consumerGroupRegularExpressionValue) encode() []byte {
	b := appendCompactStrings(newValue(), v.Topics)
	b = kbin.AppendInt64(b, v.Version)
	b = kbin.AppendInt64(b, v.Timestamp)
	return appendNoTags(b)
}

// ---- decoding ----

// valueReader reads a flexible value, checking its version.
func valueReader(what string, value []byte) (*kbin.Reader, error) {
	b := &kbin.Reader{Src: value}
	if v := b.Int16(); v != valueVersion || !b.Ok() {
		return nil, fmt.Errorf("%s: unsupported value version %d", what, v)
	}
	return b, nil
}

// skipTags reads a tagged-fields section, calling fn for the tags it
// knows (fn returns false for an unknown tag, which is skipped).
func skipTags(b *kbin.Reader, fn func(tag uint32, data []byte) bool) {
	for n := b.Uvarint(); n > 0 && b.Ok(); n-- {
		tag := b.Uvarint()
		data := b.Span(int(b.Uvarint()))
		if fn != nil {
			fn(tag, data)
		}
	}
}

func readCompactStrings(b *kbin.Reader) []string {
	n := b.CompactArrayLen()
	if n < 0 || !b.Ok() || int(n) > len(b.Src) {
		return nil
	}
	out := make([]string, 0, n)
	for i := int32(0); i < n && b.Ok(); i++ {
		out = append(out, b.CompactString())
	}
	return out
}

func readCompactInt32s(b *kbin.Reader) []int32 {
	n := b.CompactArrayLen()
	if n < 0 || !b.Ok() || int(n)*4 > len(b.Src) {
		if n > 0 {
			b.Span(len(b.Src) + 1) // invalidate
		}
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = b.Int32()
	}
	return out
}

func readTopicPartitions(b *kbin.Reader) []topicPartitions {
	n := b.CompactArrayLen()
	if n < 0 || !b.Ok() || int(n)*18 > len(b.Src) {
		if n > 0 {
			b.Span(len(b.Src) + 1)
		}
		return nil
	}
	out := make([]topicPartitions, 0, n)
	for i := int32(0); i < n && b.Ok(); i++ {
		tp := topicPartitions{TopicID: b.Uuid(), Partitions: readCompactInt32s(b)}
		skipTags(b, nil)
		out = append(out, tp)
	}
	return out
}

func decodeConsumerGroupMetadataValue(value []byte) (consumerGroupMetadataValue, error) {
	var v consumerGroupMetadataValue
	b, err := valueReader("ConsumerGroupMetadataValue", value)
	if err != nil {
		return v, err
	}
	v.Epoch = b.Int32()
	skipTags(b, nil)
	return v, complete("ConsumerGroupMetadataValue", b)
}

func decodeConsumerGroupPartitionMetadataValue(value []byte) (consumerGroupPartitionMetadataValue, error) {
	var v consumerGroupPartitionMetadataValue
	b, err := valueReader("ConsumerGroupPartitionMetadataValue", value)
	if err != nil {
		return v, err
	}
	n := b.CompactArrayLen()
	for i := int32(0); i < n && b.Ok(); i++ {
		t := topicMetadataRecord{TopicID: b.Uuid(), TopicName: b.CompactString(), NumPartitions: b.Int32()}
		m := b.CompactArrayLen()
		for j := int32(0); j < m && b.Ok(); j++ {
			p := partitionRacks{Partition: b.Int32(), Racks: readCompactStrings(b)}
			skipTags(b, nil)
			t.PartitionMetadata = append(t.PartitionMetadata, p)
		}
		skipTags(b, nil)
		v.Topics = append(v.Topics, t)
	}
	skipTags(b, nil)
	return v, complete("ConsumerGroupPartitionMetadataValue", b)
}

func decodeConsumerGroupMemberMetadataValue(value []byte) (consumerGroupMemberMetadataValue, error) {
	var v consumerGroupMemberMetadataValue
	b, err := valueReader("ConsumerGroupMemberMetadataValue", value)
	if err != nil {
		return v, err
	}
	v.InstanceID = b.CompactNullableString()
	v.RackID = b.CompactNullableString()
	v.ClientID = b.CompactString()
	v.ClientHost = b.CompactString()
	v.SubscribedTopicNames = readCompactStrings(b)
	v.SubscribedTopicRegex = b.CompactNullableString()
	v.RebalanceTimeoutMs = b.Int32()
	v.ServerAssignor = b.CompactNullableString()
	var tagErr error
	skipTags(b, func(tag uint32, data []byte) bool {
		if tag != 0 {
			return false
		}
		t := &kbin.Reader{Src: data}
		c := &classicMemberMetadata{SessionTimeoutMs: t.Int32()}
		n := t.CompactArrayLen()
		for i := int32(0); i < n && t.Ok(); i++ {
			p := classicProtocol{Name: t.CompactString(), Metadata: t.CompactBytes()}
			skipTags(t, nil)
			c.SupportedProtocols = append(c.SupportedProtocols, p)
		}
		skipTags(t, nil)
		if err := t.Complete(); err != nil {
			tagErr = fmt.Errorf("ClassicMemberMetadata: %w", err)
		}
		v.ClassicMemberMetadata = c
		return true
	})
	if tagErr != nil {
		return v, tagErr
	}
	return v, complete("ConsumerGroupMemberMetadataValue", b)
}

func decodeConsumerGroupTargetAssignmentMetadataValue(value []byte) (consumerGroupTargetAssignmentMetadataValue, error) {
	var v consumerGroupTargetAssignmentMetadataValue
	b, err := valueReader("ConsumerGroupTargetAssignmentMetadataValue", value)
	if err != nil {
		return v, err
	}
	v.AssignmentEpoch = b.Int32()
	skipTags(b, nil)
	return v, complete("ConsumerGroupTargetAssignmentMetadataValue", b)
}

func decodeConsumerGroupTargetAssignmentMemberValue(value []byte) (consumerGroupTargetAssignmentMemberValue, error) {
	var v consumerGroupTargetAssignmentMemberValue
	b, err := valueReader("ConsumerGroupTargetAssignmentMemberValue", value)
	if err != nil {
		return v, err
	}
	v.TopicPartitions = readTopicPartitions(b)
	skipTags(b, nil)
	return v, complete("ConsumerGroupTargetAssignmentMemberValue", b)
}

func decodeConsumerGroupCurrentMemberAssignmentValue(value []byte) (consumerGroupCurrentMemberAssignmentValue, error) {
	var v consumerGroupCurrentMemberAssignmentValue
	b, err := valueReader("ConsumerGroupCurrentMemberAssignmentValue", value)
	if err != nil {
		return v, err
	}
	v.MemberEpoch = b.Int32()
	v.PreviousMemberEpoch = b.Int32()
	v.State = b.Int8()
	v.AssignedPartitions = readTopicPartitions(b)
	v.PartitionsPendingRevocation = readTopicPartitions(b)
	skipTags(b, nil)
	return v, complete("ConsumerGroupCurrentMemberAssignmentValue", b)
}

func decodeConsumerGroupRegularExpressionValue(value []byte) (consumerGroupRegularExpressionValue, error) {
	var v consumerGroupRegularExpressionValue
	b, err := valueReader("ConsumerGroupRegularExpressionValue", value)
	if err != nil {
		return v, err
	}
	v.Topics = readCompactStrings(b)
	v.Version = b.Int64()
	v.Timestamp = b.Int64()
	skipTags(b, nil)
	return v, complete("ConsumerGroupRegularExpressionValue", b)
}

func complete(what string, b *kbin.Reader) error {
	if err := b.Complete(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// ---- records ----

func record(key, value []byte) runtime.Record { return runtime.Record{Key: key, Value: value} }

func consumerGroupEpochRecord(group string, epoch int32) runtime.Record {
	v := consumerGroupMetadataValue{Epoch: epoch}
	return record(groupKey(typeConsumerGroupMetadata, group), v.encode())
}

func consumerGroupEpochTombstone(group string) runtime.Record {
	return record(groupKey(typeConsumerGroupMetadata, group), nil)
}

func consumerGroupSubscriptionMetadataRecord(group string, topics []topicMetadataRecord) runtime.Record {
	v := consumerGroupPartitionMetadataValue{Topics: topics}
	return record(groupKey(typeConsumerGroupPartitionMetadata, group), v.encode())
}

func consumerGroupSubscriptionMetadataTombstone(group string) runtime.Record {
	return record(groupKey(typeConsumerGroupPartitionMetadata, group), nil)
}

func consumerGroupMemberSubscriptionRecord(group, member string, v *consumerGroupMemberMetadataValue) runtime.Record {
	return record(groupMemberKey(typeConsumerGroupMemberMetadata, group, member), v.encode())
}

func consumerGroupMemberSubscriptionTombstone(group, member string) runtime.Record {
	return record(groupMemberKey(typeConsumerGroupMemberMetadata, group, member), nil)
}

func consumerGroupTargetAssignmentEpochRecord(group string, epoch int32) runtime.Record {
	v := consumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: epoch}
	return record(groupKey(typeConsumerGroupTargetAssignmentMeta, group), v.encode())
}

func consumerGroupTargetAssignmentEpochTombstone(group string) runtime.Record {
	return record(groupKey(typeConsumerGroupTargetAssignmentMeta, group), nil)
}

func consumerGroupTargetAssignmentRecord(group, member string, tps []topicPartitions) runtime.Record {
	v := consumerGroupTargetAssignmentMemberValue{TopicPartitions: tps}
	return record(groupMemberKey(typeConsumerGroupTargetAssignmentMember, group, member), v.encode())
}

func consumerGroupTargetAssignmentTombstone(group, member string) runtime.Record {
	return record(groupMemberKey(typeConsumerGroupTargetAssignmentMember, group, member), nil)
}

func consumerGroupCurrentAssignmentRecord(group, member string, v *consumerGroupCurrentMemberAssignmentValue) runtime.Record {
	return record(groupMemberKey(typeConsumerGroupCurrentMemberAssign, group, member), v.encode())
}

func consumerGroupCurrentAssignmentTombstone(group, member string) runtime.Record {
	return record(groupMemberKey(typeConsumerGroupCurrentMemberAssign, group, member), nil)
}

func consumerGroupRegexRecord(group, regex string, v *consumerGroupRegularExpressionValue) runtime.Record {
	return record(groupMemberKey(typeConsumerGroupRegularExpression, group, regex), v.encode())
}

func consumerGroupRegexTombstone(group, regex string) runtime.Record {
	return record(groupMemberKey(typeConsumerGroupRegularExpression, group, regex), nil)
}
