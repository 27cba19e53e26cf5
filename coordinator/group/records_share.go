package group

import (
	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/moldau/moldau/coordinator/runtime"
)

// The share group records (KIP-932), as Kafka 4.2 writes them: keys as
// the KIP-848 ones (an int16 record type, then the group id and, for the
// member records, the member id, as non-flexible strings), values v0 and
// flexible, from Kafka's ShareGroup*.json schemas in the group-coordinator
// module. Kafka 4.0 also wrote ShareGroupPartitionMetadata (type 9);
// Kafka 4.1 dropped it for the metadata hash in ShareGroupMetadataValue,
// and a type 9 record is skipped on replay.

// ShareGroupMemberMetadataValue (type 10): a member's subscription.
type shareGroupMemberMetadataValue struct {
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
}

// ShareGroupMetadataValue (type 11): the group epoch and the hash of the
// subscribed topics' metadata at that epoch.
type shareGroupMetadataValue struct {
	Epoch        int32
	MetadataHash int64
}

// ShareGroupCurrentMemberAssignmentValue (type 14): a member's epochs,
// state and assigned partitions (a share group has no revocation).
type shareGroupCurrentMemberAssignmentValue struct {
	MemberEpoch         int32
	PreviousMemberEpoch int32
	State               int8
	AssignedPartitions  []topicPartitions
}

// ShareGroupStatePartitionMetadataValue (type 15): the partitions whose
// share-group state is being initialized, is initialized, or (whole
// topics) is being deleted.
type shareGroupStatePartitionMetadataValue struct {
	InitializingTopics []topicPartitionsInfo
	InitializedTopics  []topicPartitionsInfo
	DeletingTopics     []topicInfo
}

type topicPartitionsInfo struct {
	TopicID    [16]byte
	TopicName  string
	Partitions []int32
}

type topicInfo struct {
	TopicID   [16]byte
	TopicName string
}

// ---- encoding ----

func (v *shareGroupMemberMetadataValue) encode() []byte {
	b := kbin.AppendCompactNullableString(newValue(), v.RackID)
	b = kbin.AppendCompactString(b, v.ClientID)
	b = kbin.AppendCompactString(b, v.ClientHost)
	b = appendCompactStrings(b, v.SubscribedTopicNames)
	return appendNoTags(b)
}

func (v *shareGroupMetadataValue) encode() []byte {
	b := kbin.AppendInt32(newValue(), v.Epoch)
	b = kbin.AppendInt64(b, v.MetadataHash)
	return appendNoTags(b)
}

func (v *shareGroupCurrentMemberAssignmentValue) encode() []byte {
	b := kbin.AppendInt32(newValue(), v.MemberEpoch)
	b = kbin.AppendInt32(b, v.PreviousMemberEpoch)
	b = kbin.AppendInt8(b, v.State)
	b = appendTopicPartitions(b, v.AssignedPartitions)
	return appendNoTags(b)
}

func appendTopicPartitionsInfos(b []byte, ts []topicPartitionsInfo) []byte {
	b = kbin.AppendCompactArrayLen(b, len(ts))
	for _, t := range ts {
		b = kbin.AppendUuid(b, t.TopicID)
		b = kbin.AppendCompactString(b, t.TopicName)
		b = appendCompactInt32s(b, t.Partitions)
		b = appendNoTags(b)
	}
	return b
}

func (v *shareGroupStatePartitionMetadataValue) encode() []byte {
	b := appendTopicPartitionsInfos(newValue(), v.InitializingTopics)
	b = appendTopicPartitionsInfos(b, v.InitializedTopics)
	b = kbin.AppendCompactArrayLen(b, len(v.DeletingTopics))
	for _, t := range v.DeletingTopics {
		b = kbin.AppendUuid(b, t.TopicID)
		b = kbin.AppendCompactString(b, t.TopicName)
		b = appendNoTags(b)
	}
	return appendNoTags(b)
}

// ---- decoding ----

func decodeShareGroupMemberMetadataValue(value []byte) (shareGroupMemberMetadataValue, error) {
	var v shareGroupMemberMetadataValue
	b, err := valueReader("ShareGroupMemberMetadataValue", value)
	if err != nil {
		return v, err
	}
	v.RackID = b.CompactNullableString()
	v.ClientID = b.CompactString()
	v.ClientHost = b.CompactString()
	v.SubscribedTopicNames = readCompactStrings(b)
	skipTags(b, nil)
	return v, complete("ShareGroupMemberMetadataValue", b)
}

func decodeShareGroupMetadataValue(value []byte) (shareGroupMetadataValue, error) {
	var v shareGroupMetadataValue
	b, err := valueReader("ShareGroupMetadataValue", value)
	if err != nil {
		return v, err
	}
	v.Epoch = b.Int32()
	v.MetadataHash = b.Int64()
	skipTags(b, nil)
	return v, complete("ShareGroupMetadataValue", b)
}

func decodeShareGroupCurrentMemberAssignmentValue(value []byte) (shareGroupCurrentMemberAssignmentValue, error) {
	var v shareGroupCurrentMemberAssignmentValue
	b, err := valueReader("ShareGroupCurrentMemberAssignmentValue", value)
	if err != nil {
		return v, err
	}
	v.MemberEpoch = b.Int32()
	v.PreviousMemberEpoch = b.Int32()
	v.State = b.Int8()
	v.AssignedPartitions = readTopicPartitions(b)
	skipTags(b, nil)
	return v, complete("ShareGroupCurrentMemberAssignmentValue", b)
}

func readTopicPartitionsInfos(b *kbin.Reader) []topicPartitionsInfo {
	n := b.CompactArrayLen()
	if n < 0 || !b.Ok() || int(n)*18 > len(b.Src) {
		if n > 0 {
			b.Span(len(b.Src) + 1)
		}
		return nil
	}
	out := make([]topicPartitionsInfo, 0, n)
	for i := int32(0); i < n && b.Ok(); i++ {
		t := topicPartitionsInfo{TopicID: b.Uuid(), TopicName: b.CompactString(), Partitions: readCompactInt32s(b)}
		skipTags(b, nil)
		out = append(out, t)
	}
	return out
}

func decodeShareGroupStatePartitionMetadataValue(value []byte) (shareGroupStatePartitionMetadataValue, error) {
	var v shareGroupStatePartitionMetadataValue
	b, err := valueReader("ShareGroupStatePartitionMetadataValue", value)
	if err != nil {
		return v, err
	}
	v.InitializingTopics = readTopicPartitionsInfos(b)
	v.InitializedTopics = readTopicPartitionsInfos(b)
	n := b.CompactArrayLen()
	for i := int32(0); i < n && b.Ok(); i++ {
		v.DeletingTopics = append(v.DeletingTopics, topicInfo{TopicID: b.Uuid(), TopicName: b.CompactString()})
		skipTags(b, nil)
	}
	skipTags(b, nil)
	return v, complete("ShareGroupStatePartitionMetadataValue", b)
}

// ---- records ----

func shareGroupEpochRecord(group string, epoch int32, hash int64) runtime.Record {
	v := shareGroupMetadataValue{Epoch: epoch, MetadataHash: hash}
	return record(groupKey(typeShareGroupMetadata, group), v.encode())
}

func shareGroupEpochTombstone(group string) runtime.Record {
	return record(groupKey(typeShareGroupMetadata, group), nil)
}

func shareGroupMemberSubscriptionRecord(group, member string, v *shareGroupMemberMetadataValue) runtime.Record {
	return record(groupMemberKey(typeShareGroupMemberMetadata, group, member), v.encode())
}

func shareGroupMemberSubscriptionTombstone(group, member string) runtime.Record {
	return record(groupMemberKey(typeShareGroupMemberMetadata, group, member), nil)
}

// The target assignment values have the consumer groups' schemas.
func shareGroupTargetAssignmentEpochRecord(group string, epoch int32) runtime.Record {
	v := consumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: epoch}
	return record(groupKey(typeShareGroupTargetAssignmentMeta, group), v.encode())
}

func shareGroupTargetAssignmentEpochTombstone(group string) runtime.Record {
	return record(groupKey(typeShareGroupTargetAssignmentMeta, group), nil)
}

func shareGroupTargetAssignmentRecord(group, member string, tps []topicPartitions) runtime.Record {
	v := consumerGroupTargetAssignmentMemberValue{TopicPartitions: tps}
	return record(groupMemberKey(typeShareGroupTargetAssignmentMember, group, member), v.encode())
}

func shareGroupTargetAssignmentTombstone(group, member string) runtime.Record {
	return record(groupMemberKey(typeShareGroupTargetAssignmentMember, group, member), nil)
}

func shareGroupCurrentAssignmentRecord(group, member string, v *shareGroupCurrentMemberAssignmentValue) runtime.Record {
	return record(groupMemberKey(typeShareGroupCurrentMemberAssign, group, member), v.encode())
}

func shareGroupCurrentAssignmentTombstone(group, member string) runtime.Record {
	return record(groupMemberKey(typeShareGroupCurrentMemberAssign, group, member), nil)
}

func shareGroupStatePartitionMetadataRecord(group string, v *shareGroupStatePartitionMetadataValue) runtime.Record {
	return record(groupKey(typeShareGroupStatePartitionMetadata, group), v.encode())
}

func shareGroupStatePartitionMetadataTombstone(group string) runtime.Record {
	return record(groupKey(typeShareGroupStatePartitionMetadata, group), nil)
}
