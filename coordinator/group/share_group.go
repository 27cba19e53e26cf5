package group

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// shareProtocolType is ShareGroup.PROTOCOL_TYPE.
const shareProtocolType = "share"

// shareGroupState is Kafka's ShareGroup.ShareGroupState: a share group is
// Empty or Stable (members need no reconciliation: every partition may be
// assigned to several members at once, nothing is revoked first).
type shareGroupState int8

const (
	sgEmpty shareGroupState = iota
	sgStable
)

func (s shareGroupState) String() string {
	if s == sgStable {
		return "Stable"
	}
	return "Empty"
}

// initTopic is a topic's partitions in ShareGroupStatePartitionMetadata
// (Kafka's InitMapValue): its name, its partitions (sorted), and when the
// record naming them was replayed (soft state: an initialization older
// than the retry interval is tried again).
type initTopic struct {
	name       string
	partitions []int32
	timestamp  int64
}

// shareStateMetadata is ShareGroupStatePartitionMetadataInfo: which
// partitions have their share-group state being initialized, initialized,
// or (topics) being deleted, through the share coordinator's persister.
type shareStateMetadata struct {
	initializing map[[16]byte]initTopic
	initialized  map[[16]byte]initTopic
	deleting     map[[16]byte]string
}

func (m *shareStateMetadata) value() *shareGroupStatePartitionMetadataValue {
	v := &shareGroupStatePartitionMetadataValue{
		InitializingTopics: initTopicsRecord(m.initializing),
		InitializedTopics:  initTopicsRecord(m.initialized),
		DeletingTopics:     []topicInfo{},
	}
	for _, id := range sortedIDs(m.deleting) {
		v.DeletingTopics = append(v.DeletingTopics, topicInfo{TopicID: id, TopicName: m.deleting[id]})
	}
	return v
}

func initTopicsRecord(m map[[16]byte]initTopic) []topicPartitionsInfo {
	out := []topicPartitionsInfo{}
	for _, id := range sortedIDs(m) {
		t := m[id]
		out = append(out, topicPartitionsInfo{TopicID: id, TopicName: t.name, Partitions: slices.Clone(t.partitions)})
	}
	return out
}

func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	return ids
}

// ShareGroup is Kafka's ShareGroup (with ModernGroup): a KIP-932 group.
// Its state changes only by replaying records, but for the metadata
// refresh deadline and the replay time of initializing topics.
type ShareGroup struct {
	groupID         string
	groupEpoch      int32
	assignmentEpoch int32
	metadataHash    int64
	state           shareGroupState

	members              map[string]*ShareGroupMember
	subscribedTopicNames map[string]int // topic -> members subscribing
	targetAssignment     map[string]assignment
	stateMetadata        *shareStateMetadata // nil: no record

	refreshDeadlineMs    int64
	refreshDeadlineEpoch int32
}

func newShareGroup(id string) *ShareGroup {
	return &ShareGroup{
		groupID:              id,
		members:              map[string]*ShareGroupMember{},
		subscribedTopicNames: map[string]int{},
		targetAssignment:     map[string]assignment{},
	}
}

func (g *ShareGroup) id() string          { return g.groupID }
func (g *ShareGroup) kind() groupType     { return typeShare }
func (g *ShareGroup) stateString() string { return g.state.String() }
func (g *ShareGroup) isEmpty() bool       { return g.state == sgEmpty }
func (g *ShareGroup) numMembers() int     { return len(g.members) }

func (g *ShareGroup) hasMember(id string) bool {
	_, ok := g.members[id]
	return ok
}

func (g *ShareGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// getOrMaybeCreateMember is ShareGroup.getOrMaybeCreateMember, without
// adding the new member (records do that).
func (g *ShareGroup) getOrMaybeCreateMember(id string, create bool) (*ShareGroupMember, error) {
	if m := g.members[id]; m != nil {
		return m, nil
	}
	if !create {
		return nil, apierr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, g.groupID)
	}
	return &ShareGroupMember{memberID: id, assigned: assignment{}}, nil
}

func (g *ShareGroup) targetAssignmentOf(memberID string) assignment {
	if a, ok := g.targetAssignment[memberID]; ok {
		return a
	}
	return assignment{}
}

func (g *ShareGroup) updateMember(m *ShareGroupMember) {
	old := g.members[m.memberID]
	g.members[m.memberID] = m
	g.updateCounts(old, m)
	g.updateState()
}

func (g *ShareGroup) removeMember(id string) {
	old := g.members[id]
	if old == nil {
		return
	}
	delete(g.members, id)
	g.updateCounts(old, nil)
	g.updateState()
}

func (g *ShareGroup) updateCounts(old, m *ShareGroupMember) {
	if old != nil {
		for _, t := range old.subscribedTopicNames {
			inc(g.subscribedTopicNames, t, -1)
		}
	}
	if m != nil {
		for _, t := range m.subscribedTopicNames {
			inc(g.subscribedTopicNames, t, 1)
		}
	}
}

// updateState is maybeUpdateGroupState: Stable with members, else Empty.
func (g *ShareGroup) updateState() {
	g.state = sgStable
	if len(g.members) == 0 {
		g.state = sgEmpty
	}
}

// computeSubscribedTopicNames is the topic counts with old replaced by m
// (either may be nil).
func (g *ShareGroup) computeSubscribedTopicNames(old, m *ShareGroupMember) map[string]int {
	out := make(map[string]int, len(g.subscribedTopicNames))
	for t, n := range g.subscribedTopicNames {
		out[t] = n
	}
	if old != nil {
		for _, t := range old.subscribedTopicNames {
			inc(out, t, -1)
		}
	}
	if m != nil {
		for _, t := range m.subscribedTopicNames {
			inc(out, t, 1)
		}
	}
	return out
}

func (g *ShareGroup) hasMetadataExpired(nowMs int64) bool {
	return nowMs >= g.refreshDeadlineMs || g.groupEpoch < g.refreshDeadlineEpoch
}

func (g *ShareGroup) requestMetadataRefresh() { g.refreshDeadlineMs, g.refreshDeadlineEpoch = 0, 0 }

// computeMetadataHash hashes the subscribed topics that exist: id, name
// and partition count, in name order (Kafka's ModernGroup.computeMetadataHash
// over Utils.computeTopicHash). Kafka hashes with XXH3 and the partitions'
// racks; Moldau's hash is FNV-1a over the same fields without racks, so
// the value differs from Kafka's, and only ever compares with values
// Moldau computed: a group loaded from Kafka's records bumps its epoch
// once at its first heartbeat.
func computeMetadataHash(names map[string]int, topics Metadata) int64 {
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	h := fnv.New64a()
	found := false
	var buf [4]byte
	for _, n := range sorted {
		t, ok := topics.TopicByName(n)
		if !ok {
			continue
		}
		found = true
		h.Write(t.ID[:])
		binary.BigEndian.PutUint32(buf[:], uint32(len(t.Name)))
		h.Write(buf[:])
		h.Write([]byte(t.Name))
		binary.BigEndian.PutUint32(buf[:], uint32(t.Partitions))
		h.Write(buf[:])
	}
	if !found {
		return 0 // as Kafka's for no topics
	}
	return int64(h.Sum64())
}

// subscribedTopicIDs is what a member subscribes to, by topic id, among
// the topics that exist.
func (g *ShareGroup) subscribedTopicIDs(m *ShareGroupMember, topics Metadata) map[[16]byte]bool {
	out := map[[16]byte]bool{}
	for _, n := range m.subscribedTopicNames {
		if t, ok := topics.TopicByName(n); ok {
			out[t.ID] = true
		}
	}
	return out
}

func (g *ShareGroup) validateOffsetCommit(string, *string, int32, bool, int16) error {
	return g.notConsumerGroup()
}
func (g *ShareGroup) validateOffsetFetch(*string, int32) error { return g.notConsumerGroup() }
func (g *ShareGroup) validateOffsetDelete() error              { return g.notConsumerGroup() }

func (g *ShareGroup) notConsumerGroup() error {
	return apierr.Errorf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", g.groupID)
}

func (g *ShareGroup) validateDeleteGroup() error {
	if g.state != sgEmpty {
		return kerr.NonEmptyGroup
	}
	return nil
}

func (g *ShareGroup) isSubscribedToTopic(topic string) bool { return g.subscribedTopicNames[topic] > 0 }

// offsetExpirationBase: share groups have no committed offsets.
func (g *ShareGroup) offsetExpirationBase() (func(OffsetAndMetadata) int64, bool) {
	return nil, false
}

// tombstones is createGroupTombstoneRecords, in Kafka's order.
func (g *ShareGroup) tombstones() []runtime.Record {
	ids := g.sortedMemberIDs()
	var recs []runtime.Record
	for _, id := range ids {
		recs = append(recs, shareGroupCurrentAssignmentTombstone(g.groupID, id))
	}
	for _, id := range ids {
		recs = append(recs, shareGroupTargetAssignmentTombstone(g.groupID, id))
	}
	recs = append(recs, shareGroupTargetAssignmentEpochTombstone(g.groupID))
	for _, id := range ids {
		recs = append(recs, shareGroupMemberSubscriptionTombstone(g.groupID, id))
	}
	return append(recs, shareGroupStatePartitionMetadataTombstone(g.groupID), shareGroupEpochTombstone(g.groupID))
}

func (g *ShareGroup) asListed() kmsg.ListGroupsResponseGroup {
	l := kmsg.NewListGroupsResponseGroup()
	l.Group, l.ProtocolType, l.GroupState, l.GroupType = g.groupID, shareProtocolType, g.state.String(), typeShare.String()
	return l
}

// initializedPartitions is the partitions whose share state is
// initialized, by topic id (initializedShareGroupPartitions).
func (g *ShareGroup) initializedPartitions() map[[16]byte][]int32 {
	out := map[[16]byte][]int32{}
	if g.stateMetadata != nil {
		for id, t := range g.stateMetadata.initialized {
			out[id] = slices.Clone(t.partitions)
		}
	}
	return out
}

// ShareGroupMember is Kafka's ShareGroupMember. Values are immutable.
type ShareGroupMember struct {
	memberID             string
	memberEpoch          int32
	previousMemberEpoch  int32
	state                memberState // always Stable in a share group
	rackID               *string
	clientID             string
	clientHost           string
	subscribedTopicNames []string // sorted
	assigned             assignment
}

func (m *ShareGroupMember) copy() *ShareGroupMember {
	c := *m
	return &c
}

func (m *ShareGroupMember) isReconciledTo(epoch int32) bool {
	return m.state == memberStable && m.memberEpoch == epoch
}

// sameSubscription reports whether the member's ShareGroupMemberMetadata
// record would be unchanged.
func (m *ShareGroupMember) sameSubscription(o *ShareGroupMember) bool {
	return equalStrPtr(m.rackID, o.rackID) && m.clientID == o.clientID && m.clientHost == o.clientHost &&
		slices.Equal(m.subscribedTopicNames, o.subscribedTopicNames)
}

func (m *ShareGroupMember) equal(o *ShareGroupMember) bool {
	return m.memberID == o.memberID && m.memberEpoch == o.memberEpoch && m.previousMemberEpoch == o.previousMemberEpoch &&
		m.state == o.state && m.sameSubscription(o) && m.assigned.equal(o.assigned)
}

func (m *ShareGroupMember) subscriptionValue() *shareGroupMemberMetadataValue {
	names := slices.Clone(m.subscribedTopicNames)
	if names == nil {
		names = []string{}
	}
	return &shareGroupMemberMetadataValue{RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost, SubscribedTopicNames: names}
}

func (m *ShareGroupMember) assignmentValue() *shareGroupCurrentMemberAssignmentValue {
	return &shareGroupCurrentMemberAssignmentValue{
		MemberEpoch: m.memberEpoch, PreviousMemberEpoch: m.previousMemberEpoch, State: int8(m.state),
		AssignedPartitions: m.assigned.toRecord(),
	}
}

// describe is asShareGroupDescribeMember.
func (m *ShareGroupMember) describe(names func([16]byte) (string, bool)) kmsg.ShareGroupDescribeResponseGroupMember {
	d := kmsg.NewShareGroupDescribeResponseGroupMember()
	d.MemberID, d.RackID, d.MemberEpoch = m.memberID, m.rackID, m.memberEpoch
	d.ClientID, d.ClientHost = m.clientID, m.clientHost
	d.SubscribedTopicNames = slices.Clone(m.subscribedTopicNames)
	if d.SubscribedTopicNames == nil {
		d.SubscribedTopicNames = []string{}
	}
	d.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
	for _, t := range m.assigned.sortedTopics() {
		tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
		tp.TopicID = t
		if n, ok := names(t); ok {
			tp.Topic = n
		}
		tp.Partitions = slices.Clone(m.assigned[t])
		d.Assignment.TopicPartitions = append(d.Assignment.TopicPartitions, tp)
	}
	return d
}
