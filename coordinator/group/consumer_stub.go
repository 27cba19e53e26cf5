package group

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime"
)

// The consumer protocol (KIP-848) is not served yet: no consumer group is
// ever created, and the classic protocol's paths into one are refused.

type ConsumerGroup struct{ groupID string }

func (g *ConsumerGroup) id() string                                                     { return g.groupID }
func (g *ConsumerGroup) kind() groupType                                                { return typeConsumer }
func (g *ConsumerGroup) stateString() string                                            { return "Empty" }
func (g *ConsumerGroup) isEmpty() bool                                                  { return true }
func (g *ConsumerGroup) validateOffsetCommit(string, *string, int32, bool, int16) error { return nil }
func (g *ConsumerGroup) validateOffsetFetch(*string, int32) error                       { return nil }
func (g *ConsumerGroup) validateOffsetDelete() error                                    { return nil }
func (g *ConsumerGroup) validateDeleteGroup() error                                     { return nil }
func (g *ConsumerGroup) isSubscribedToTopic(string) bool                                { return false }
func (g *ConsumerGroup) offsetExpirationBase() (func(OffsetAndMetadata) int64, bool) {
	return nil, false
}
func (g *ConsumerGroup) tombstones() []runtime.Record { return nil }
func (g *ConsumerGroup) asListed() kmsg.ListGroupsResponseGroup {
	return kmsg.ListGroupsResponseGroup{}
}

type metadataVersions struct{ version atomic.Int64 }

func (s *Shard) replayConsumerGroupRecord(parsedKey, []byte) error { return nil }
func (s *Shard) classicGroupJoinToConsumerGroup(*ConsumerGroup, RequestContext, *kmsg.JoinGroupRequest, func(*kmsg.JoinGroupResponse)) (voidResult, error) {
	return emptyResult, kerr.InconsistentGroupProtocol
}
func (s *Shard) classicGroupSyncToConsumerGroup(*ConsumerGroup, *kmsg.SyncGroupRequest, func(*kmsg.SyncGroupResponse)) (voidResult, error) {
	return emptyResult, kerr.UnknownMemberID
}
func (s *Shard) classicGroupHeartbeatToConsumerGroup(*ConsumerGroup, *kmsg.HeartbeatRequest) (runtime.Result[*kmsg.HeartbeatResponse], error) {
	return runtime.Result[*kmsg.HeartbeatResponse]{}, kerr.UnknownMemberID
}
func (s *Shard) classicGroupLeaveToConsumerGroup(*ConsumerGroup, *kmsg.LeaveGroupRequest) (runtime.Result[*kmsg.LeaveGroupResponse], error) {
	return runtime.Result[*kmsg.LeaveGroupResponse]{}, kerr.UnknownMemberID
}
func (s *Shard) maybeDeleteEmptyConsumerGroup(_ string, r []runtime.Record) []runtime.Record {
	return r
}
func (s *Shard) unindexConsumerGroup(*ConsumerGroup)  {}
func (s *Shard) onConsumerGroupLoaded(*ConsumerGroup) {}
func (s *Shard) describeConsumerGroupAsClassic(*ConsumerGroup, int16) kmsg.DescribeGroupsResponseGroup {
	return kmsg.DescribeGroupsResponseGroup{}
}
