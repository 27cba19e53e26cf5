package group

import (
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// Shard is Kafka's GroupCoordinatorShard for one partition of
// __consumer_offsets: the groups whose id hashes to the partition and their
// committed offsets. Its methods are spread over files as Kafka spreads
// them over managers: classic_*.go and consumer_*.go are the
// GroupMetadataManager, offsets.go the OffsetMetadataManager, admin.go
// the list/describe/delete operations.
//
// A Shard is used only from its runtime goroutine (see package runtime).
type Shard struct {
	cfg      *Config
	timer    runtime.Timer
	now      func() time.Time
	log      *slog.Logger
	topics   Metadata
	versions *metadataVersions
	metrics  *shardMetrics
	// groupConfigs are the group configs of the metadata, shared by the
	// service's shards.
	groupConfigs *groupConfigs

	groups  map[string]group
	offsets offsetStore

	// consumer groups by subscribed topic, for metadata changes
	groupsByTopic map[string]map[string]bool
}

func newShard(cfg *Config, ctx runtime.ShardContext, topics Metadata, versions *metadataVersions, metrics *shardMetrics) *Shard {
	if versions == nil {
		versions = &metadataVersions{}
	}
	return &Shard{
		groupConfigs:  &groupConfigs{},
		versions:      versions,
		cfg:           cfg,
		timer:         ctx.Timer,
		now:           ctx.Now,
		log:           ctx.Logger,
		topics:        topics,
		metrics:       metrics,
		groups:        map[string]group{},
		offsets:       newOffsetStore(),
		groupsByTopic: map[string]map[string]bool{},
	}
}

// Timer keys (Kafka's).
const groupExpirationKey = "expire-group-metadata"

func classicHeartbeatKey(groupID, memberID string) string {
	return "heartbeat-" + groupID + "-" + memberID
}
func classicJoinKey(groupID string) string { return "join-" + groupID }
func classicSyncKey(groupID string) string { return "sync-" + groupID }

// Replay applies one record of __consumer_offsets.
func (s *Shard) Replay(offset, producerID int64, _ int16, key, value []byte) error {
	k, err := parseKey(key)
	if err != nil {
		return err
	}
	switch k.typ {
	case typeOffsetCommitV0, typeOffsetCommit:
		return s.replayOffsetCommit(offset, producerID, k, value)
	case typeGroupMetadata:
		return s.replayGroupMetadata(k.group, value)
	case typeConsumerGroupMetadata, typeConsumerGroupPartitionMetadata, typeConsumerGroupMemberMetadata,
		typeConsumerGroupTargetAssignmentMeta, typeConsumerGroupTargetAssignmentMember,
		typeConsumerGroupCurrentMemberAssign, typeConsumerGroupRegularExpression:
		return s.replayConsumerGroupRecord(k, value)
	case typeShareGroupMetadata, typeShareGroupMemberMetadata, typeShareGroupTargetAssignmentMeta,
		typeShareGroupTargetAssignmentMember, typeShareGroupCurrentMemberAssign, typeShareGroupStatePartitionMetadata:
		return s.replayShareGroupRecord(k, value)
	}
	return nil // ShareGroupPartitionMetadata: Kafka 4.0's, not used since
}

// ReplayEndTransactionMarker commits or aborts a producer's transactional
// offset commits.
func (s *Shard) ReplayEndTransactionMarker(producerID int64, _ int16, commit bool) error {
	s.replayEndTransactionMarker(producerID, commit)
	return nil
}

// OnLoaded schedules the members' session timeouts and the offset expiry
// (Kafka's GroupCoordinatorShard.onLoaded).
func (s *Shard) OnLoaded() {
	for _, id := range s.sortedGroupIDs() {
		switch g := s.groups[id].(type) {
		case *ClassicGroup:
			for _, m := range g.orderedMembers() {
				s.rescheduleClassicHeartbeat(g, m, time.Duration(m.sessionTimeoutMs)*time.Millisecond)
			}
			if g.numMembers() > s.cfg.ClassicMaxSize {
				s.prepareRebalance(g, fmt.Sprintf("freshly-loaded group %s (size %d) is over capacity %d", id, g.numMembers(), s.cfg.ClassicMaxSize))
			}
		case *ConsumerGroup:
			s.onConsumerGroupLoaded(g)
		case *ShareGroup:
			s.onShareGroupLoaded(g)
		}
	}
	s.scheduleGroupMetadataExpiration()
}

// OnUnloaded answers the parked JoinGroup and SyncGroup requests with
// NOT_COORDINATOR (Kafka's GroupMetadataManager.onUnloaded).
func (s *Shard) OnUnloaded() {
	for _, id := range s.sortedGroupIDs() {
		g, ok := s.groups[id].(*ClassicGroup)
		if !ok {
			continue
		}
		g.transitionTo(stateDead)
		switch g.previousState {
		case statePreparingRebalance:
			for _, m := range g.orderedMembers() {
				g.completeJoin(m, joinError(m.memberID, notCoordinatorCode))
			}
		case stateCompletingRebalance, stateStable:
			for _, m := range g.orderedMembers() {
				g.completeSync(m, syncError(notCoordinatorCode))
			}
		}
	}
}

func (s *Shard) sortedGroupIDs() []string {
	ids := make([]string, 0, len(s.groups))
	for id := range s.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// removeGroup forgets a group (Kafka's removeGroup).
func (s *Shard) removeGroup(id string) {
	g := s.groups[id]
	if g == nil {
		return
	}
	delete(s.groups, id)
	if cg, ok := g.(*ConsumerGroup); ok {
		s.unindexConsumerGroup(cg)
	}
}

// getOrMaybeCreateClassicGroup returns the classic group, creating it if
// create; a consumer group of that id is GROUP_ID_NOT_FOUND unless empty
// and create (then it is replaced); a share group is GROUP_ID_NOT_FOUND.
func (s *Shard) getOrMaybeCreateClassicGroup(id string, create bool) (*ClassicGroup, error) {
	switch g := s.groups[id].(type) {
	case *ClassicGroup:
		return g, nil
	case nil:
		if !create {
			return nil, groupIDNotFound(id)
		}
		cg := newClassicGroup(id, s.now)
		s.groups[id] = cg
		return cg, nil
	case *ShareGroup:
		return nil, apierr.Errorf(kerr.GroupIDNotFound, "Group %s is not a classic group.", id)
	default:
		if create && g.isEmpty() {
			s.removeGroup(id)
			cg := newClassicGroup(id, s.now)
			s.groups[id] = cg
			return cg, nil
		}
		return nil, groupIDNotFound(id)
	}
}

// cleanupGroupMetadata expires offsets and deletes groups left with none
// (Kafka's cleanupGroupMetadata), then schedules its next run.
func (s *Shard) cleanupGroupMetadata() (runtime.Result[runtime.Void], error) {
	start := s.now()
	var records []runtime.Record
	for _, id := range s.sortedGroupIDs() {
		var allExpired bool
		records, allExpired = s.cleanupExpiredOffsets(id, records)
		if allExpired {
			records = s.maybeDeleteGroup(id, records)
		}
	}
	if len(records) > 0 {
		s.log.Info("expired group metadata", "tombstones", len(records), "took", s.now().Sub(start))
	}
	s.scheduleGroupMetadataExpiration()
	return runtime.Result[runtime.Void]{Records: records}, nil
}

func (s *Shard) scheduleGroupMetadataExpiration() {
	s.timer.Schedule(groupExpirationKey, s.cfg.OffsetsRetentionCheckInterval, s.cleanupGroupMetadata)
}

// maybeDeleteGroup adds the tombstones of an empty group; share groups
// never expire (ShareGroup.shouldExpire).
func (s *Shard) maybeDeleteGroup(id string, records []runtime.Record) []runtime.Record {
	if _, share := s.groups[id].(*ShareGroup); share {
		return records
	}
	if g := s.groups[id]; g != nil && g.isEmpty() {
		records = append(records, g.tombstones()...)
	}
	return records
}
