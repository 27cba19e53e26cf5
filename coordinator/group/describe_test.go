package group

import (
	"strings"
	"testing"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/coordinator/runtime"
)

// Every KIP-848 and share group record the coordinator writes reads back
// through DescribeRecord as the event a tool shows; a tombstone has no
// text; a value cut short is an error, not a panic.
func TestDescribeRecord(t *testing.T) {
	orders, gone := uuid.Random(), uuid.Random()
	names := func(id uuid.UUID) (string, bool) { return "orders", id == orders }
	tps := []topicPartitions{{TopicID: orders, Partitions: []int32{0, 2}}, {TopicID: gone, Partitions: []int32{1}}}
	instance, assignor, regex := "i-1", "uniform", "ord.*"
	for _, tc := range []struct {
		rec   runtime.Record
		name  string
		share bool
		text  string
	}{
		{consumerGroupEpochRecord("g", 4), "ConsumerGroupMetadata", false, "group epoch 4"},
		{consumerGroupSubscriptionMetadataRecord("g", []topicMetadataRecord{{TopicID: orders, TopicName: "orders", NumPartitions: 3}}),
			"ConsumerGroupPartitionMetadata", false, "subscribed topics orders (3 partitions)"},
		{consumerGroupMemberSubscriptionRecord("g", "m", &consumerGroupMemberMetadataValue{InstanceID: &instance, ClientID: "c", ClientHost: "/h",
			SubscribedTopicNames: []string{"orders"}, SubscribedTopicRegex: &regex, RebalanceTimeoutMs: -1, ServerAssignor: &assignor}),
			"ConsumerGroupMemberMetadata", false, "client c on /h, instance i-1, subscribes to orders, subscribes to /ord.*/, assignor uniform"},
		{consumerGroupTargetAssignmentEpochRecord("g", 5), "ConsumerGroupTargetAssignmentMetadata", false, "target assignment epoch 5"},
		{consumerGroupTargetAssignmentRecord("g", "m", tps), "ConsumerGroupTargetAssignmentMember", false,
			"target orders [0 2]; " + gone.String() + " [1]"},
		{consumerGroupCurrentAssignmentRecord("g", "m", &consumerGroupCurrentMemberAssignmentValue{MemberEpoch: 5, PreviousMemberEpoch: 4,
			State: int8(memberUnrevokedPartitions), AssignedPartitions: tps[:1], PartitionsPendingRevocation: tps[1:]}),
			"ConsumerGroupCurrentMemberAssignment", false, "epoch 5 (was 4), unrevoked partitions, assigned orders [0 2], revoking " + gone.String() + " [1]"},
		{consumerGroupRegexRecord("g", regex, &consumerGroupRegularExpressionValue{Topics: []string{"orders"}, Version: 7, Timestamp: 1}),
			"ConsumerGroupRegularExpression", false, "matches orders"},
		{shareGroupEpochRecord("s", 2, 99), "ShareGroupMetadata", true, "group epoch 2"},
		{shareGroupMemberSubscriptionRecord("s", "m", &shareGroupMemberMetadataValue{ClientID: "c", ClientHost: "/h", SubscribedTopicNames: []string{"orders"}}),
			"ShareGroupMemberMetadata", true, "client c on /h, subscribes to orders"},
		{shareGroupTargetAssignmentEpochRecord("s", 3), "ShareGroupTargetAssignmentMetadata", true, "target assignment epoch 3"},
		{shareGroupTargetAssignmentRecord("s", "m", tps[:1]), "ShareGroupTargetAssignmentMember", true, "target orders [0 2]"},
		{shareGroupCurrentAssignmentRecord("s", "m", &shareGroupCurrentMemberAssignmentValue{MemberEpoch: 3, PreviousMemberEpoch: 2, AssignedPartitions: tps[:1]}),
			"ShareGroupCurrentMemberAssignment", true, "epoch 3 (was 2), stable, assigned orders [0 2]"},
		{shareGroupStatePartitionMetadataRecord("s", &shareGroupStatePartitionMetadataValue{
			InitializingTopics: []topicPartitionsInfo{{TopicID: orders, TopicName: "orders", Partitions: []int32{1}}},
			InitializedTopics:  []topicPartitionsInfo{{TopicID: orders, TopicName: "orders", Partitions: []int32{0}}},
			DeletingTopics:     []topicInfo{{TopicID: gone, TopicName: "old"}}}),
			"ShareGroupStatePartitionMetadata", true, "share state initializing orders [1], initialized orders [0], deleting old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := DescribeRecord(tc.rec.Key, tc.rec.Value, names)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != tc.name || s.Share != tc.share || s.Text != tc.text || s.Group == "" {
				t.Errorf("got %+v\nwant name %s share %v text %q", s, tc.name, tc.share, tc.text)
			}
			if strings.Contains(tc.name, "Member") && s.Member != "m" {
				t.Errorf("member %q, want m", s.Member)
			}
			// The tombstone of the same key.
			s, err = DescribeRecord(tc.rec.Key, nil, names)
			if err != nil || s.Name != tc.name || s.Text != "" {
				t.Errorf("tombstone: %+v, %v", s, err)
			}
			// Every cut of the value is an error, never a panic.
			for n := range len(tc.rec.Value) {
				if _, err := DescribeRecord(tc.rec.Key, tc.rec.Value[:n], names); err == nil {
					t.Errorf("value cut to %d of %d bytes: no error", n, len(tc.rec.Value))
				}
			}
		})
	}
	if _, err := DescribeRecord(offsetCommitKey("g", "t", 0), nil, names); err == nil {
		t.Error("an offset commit key: no error")
	}
}
