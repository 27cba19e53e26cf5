package group

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// consumerGroupState is Kafka's ConsumerGroup.ConsumerGroupState.
type consumerGroupState int8

const (
	cgEmpty consumerGroupState = iota
	cgAssigning
	cgReconciling
	cgStable
	cgDead
)

func (s consumerGroupState) String() string {
	return [...]string{"Empty", "Assigning", "Reconciling", "Stable", "Dead"}[s]
}

// topicMetadata is a subscribed topic as of the last target assignment
// (Kafka's TopicMetadata).
type topicMetadata struct {
	id            [16]byte
	name          string
	numPartitions int32
}

// resolvedRegex is what a regular expression subscription resolved to
// (Kafka's ResolvedRegularExpression).
type resolvedRegex struct {
	topics    []string // sorted
	version   int64
	timestamp int64
}

// ConsumerGroup is Kafka's ConsumerGroup (with ModernGroup): a group of
// the consumer protocol. Its state changes only by replaying records
// (plus the soft state Kafka keeps out of records: the metadata refresh
// deadline and the regex refresh time).
type ConsumerGroup struct {
	groupID         string
	groupEpoch      int32
	assignmentEpoch int32
	state           consumerGroupState

	members       map[string]*ConsumerGroupMember
	staticMembers map[string]string // instance id -> member id

	// subscribedTopicNames counts, per topic, the members subscribing to
	// it by name plus one per resolved regex matching it.
	subscribedTopicNames map[string]int
	subscribedRegexes    map[string]int // regex -> members subscribed
	resolvedRegexes      map[string]resolvedRegex
	subscriptionMetadata map[string]topicMetadata

	targetAssignment map[string]assignment
	inverted         map[[16]byte]map[int32]string // topic -> partition -> member (target)
	partitionEpochs  map[[16]byte]map[int32]int32  // topic -> partition -> epoch of its owner

	serverAssignors   map[string]int
	numClassicMembers int
	classicProtocols  map[string]int

	// soft state
	refreshDeadlineMs    int64
	refreshDeadlineEpoch int32
	lastRegexRefreshMs   int64
	lastRegexVersion     int64
}

func newConsumerGroup(id string) *ConsumerGroup {
	return &ConsumerGroup{
		groupID:              id,
		members:              map[string]*ConsumerGroupMember{},
		staticMembers:        map[string]string{},
		subscribedTopicNames: map[string]int{},
		subscribedRegexes:    map[string]int{},
		resolvedRegexes:      map[string]resolvedRegex{},
		subscriptionMetadata: map[string]topicMetadata{},
		targetAssignment:     map[string]assignment{},
		inverted:             map[[16]byte]map[int32]string{},
		partitionEpochs:      map[[16]byte]map[int32]int32{},
		serverAssignors:      map[string]int{},
		classicProtocols:     map[string]int{},
	}
}

func (g *ConsumerGroup) id() string          { return g.groupID }
func (g *ConsumerGroup) kind() groupType     { return typeConsumer }
func (g *ConsumerGroup) stateString() string { return g.state.String() }
func (g *ConsumerGroup) isEmpty() bool       { return g.state == cgEmpty }
func (g *ConsumerGroup) numMembers() int     { return len(g.members) }

func (g *ConsumerGroup) hasMember(id string) bool {
	_, ok := g.members[id]
	return ok
}

// sortedMemberIDs returns the member ids in order, for deterministic
// records and assignments.
func (g *ConsumerGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (g *ConsumerGroup) member(id string) (*ConsumerGroupMember, error) {
	if m := g.members[id]; m != nil {
		return m, nil
	}
	return nil, apierr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, g.groupID)
}

// getOrMaybeCreateMember returns the member, or a new one if create.
func (g *ConsumerGroup) getOrMaybeCreateMember(id string, create bool) (*ConsumerGroupMember, error) {
	if m := g.members[id]; m != nil {
		return m, nil
	}
	if !create {
		return nil, apierr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, g.groupID)
	}
	return newConsumerGroupMember(id), nil
}

func (g *ConsumerGroup) staticMember(instanceID *string) *ConsumerGroupMember {
	if instanceID == nil {
		return nil
	}
	if id, ok := g.staticMembers[*instanceID]; ok {
		return g.members[id]
	}
	return nil
}

func (g *ConsumerGroup) staticMemberID(instanceID *string) string {
	if instanceID == nil {
		return ""
	}
	return g.staticMembers[*instanceID]
}

func (g *ConsumerGroup) targetAssignmentOf(memberID string) assignment {
	if a, ok := g.targetAssignment[memberID]; ok {
		return a
	}
	return assignment{}
}

// targetAssignmentFor is the target of a member, or of the static member
// it replaces.
func (g *ConsumerGroup) targetAssignmentFor(memberID string, instanceID *string) assignment {
	if a, ok := g.targetAssignment[memberID]; ok {
		return a
	}
	if prev := g.staticMemberID(instanceID); prev != "" {
		return g.targetAssignmentOf(prev)
	}
	return assignment{}
}

func (g *ConsumerGroup) setGroupEpoch(e int32) {
	g.groupEpoch = e
	g.updateState()
}

func (g *ConsumerGroup) setAssignmentEpoch(e int32) {
	g.assignmentEpoch = e
	g.updateState()
}

// updateMember adds or replaces a member.
func (g *ConsumerGroup) updateMember(m *ConsumerGroupMember) {
	old := g.members[m.memberID]
	g.members[m.memberID] = m
	g.updateCounts(old, m)
	g.removePartitionEpochs(old)
	g.addPartitionEpochs(m)
	if m.instanceID != nil {
		g.staticMembers[*m.instanceID] = m.memberID
	}
	g.updateState()
}

func (g *ConsumerGroup) removeMember(id string) {
	old := g.members[id]
	if old == nil {
		return
	}
	delete(g.members, id)
	g.updateCounts(old, nil)
	g.removePartitionEpochs(old)
	if old.instanceID != nil && g.staticMembers[*old.instanceID] == id {
		delete(g.staticMembers, *old.instanceID)
	}
	g.updateState()
}

func inc(m map[string]int, k string, d int) {
	if n := m[k] + d; n > 0 {
		m[k] = n
	} else {
		delete(m, k)
	}
}

func (g *ConsumerGroup) updateCounts(old, m *ConsumerGroupMember) {
	for _, x := range []struct {
		m *ConsumerGroupMember
		d int
	}{{old, -1}, {m, 1}} {
		if x.m == nil {
			continue
		}
		for _, t := range x.m.subscribedTopicNames {
			inc(g.subscribedTopicNames, t, x.d)
		}
		if x.m.subscribedTopicRegex != "" {
			inc(g.subscribedRegexes, x.m.subscribedTopicRegex, x.d)
		}
		if x.m.serverAssignor != "" {
			inc(g.serverAssignors, x.m.serverAssignor, x.d)
		}
		if x.m.useClassicProtocol() {
			g.numClassicMembers += x.d
			for _, p := range x.m.classic.SupportedProtocols {
				inc(g.classicProtocols, p.Name, x.d)
			}
		}
	}
}

func (g *ConsumerGroup) addPartitionEpochs(m *ConsumerGroupMember) {
	for _, a := range []assignment{m.assigned, m.pendingRevocation} {
		for t, ps := range a {
			e := g.partitionEpochs[t]
			if e == nil {
				e = map[int32]int32{}
				g.partitionEpochs[t] = e
			}
			for _, p := range ps {
				e[p] = m.memberEpoch
			}
		}
	}
}

func (g *ConsumerGroup) removePartitionEpochs(m *ConsumerGroupMember) {
	if m == nil {
		return
	}
	for _, a := range []assignment{m.assigned, m.pendingRevocation} {
		for t, ps := range a {
			e := g.partitionEpochs[t]
			for _, p := range ps {
				if cur, ok := e[p]; ok && cur == m.memberEpoch {
					delete(e, p)
				}
			}
			if len(e) == 0 {
				delete(g.partitionEpochs, t)
			}
		}
	}
}

// currentPartitionEpoch is the epoch of the member holding a partition, or
// -1 if it is free.
func (g *ConsumerGroup) currentPartitionEpoch(t [16]byte, p int32) int32 {
	if e, ok := g.partitionEpochs[t][p]; ok {
		return e
	}
	return -1
}

func (g *ConsumerGroup) updateTargetAssignment(memberID string, a assignment) {
	old := g.targetAssignmentOf(memberID)
	for t, ps := range old {
		inv := g.inverted[t]
		for _, p := range subtractSorted(ps, a[t]) {
			if inv[p] == memberID {
				delete(inv, p)
			}
		}
		if len(inv) == 0 {
			delete(g.inverted, t)
		}
	}
	for t, ps := range a {
		inv := g.inverted[t]
		if inv == nil {
			inv = map[int32]string{}
			g.inverted[t] = inv
		}
		for _, p := range subtractSorted(ps, old[t]) {
			inv[p] = memberID
		}
	}
	g.targetAssignment[memberID] = a
}

func (g *ConsumerGroup) removeTargetAssignment(memberID string) {
	g.updateTargetAssignment(memberID, assignment{})
	delete(g.targetAssignment, memberID)
}

// updateResolvedRegex sets (or removes, r nil) what a regex resolved to,
// keeping the topic counts.
func (g *ConsumerGroup) updateResolvedRegex(regex string, r *resolvedRegex) {
	if old, ok := g.resolvedRegexes[regex]; ok {
		for _, t := range old.topics {
			inc(g.subscribedTopicNames, t, -1)
		}
		delete(g.resolvedRegexes, regex)
	}
	if r != nil {
		for _, t := range r.topics {
			inc(g.subscribedTopicNames, t, 1)
		}
		g.resolvedRegexes[regex] = *r
		g.lastRegexRefreshMs = max(g.lastRegexRefreshMs, r.timestamp)
		g.lastRegexVersion = max(g.lastRegexVersion, r.version)
	}
}

// updateState is maybeUpdateGroupState.
func (g *ConsumerGroup) updateState() {
	switch {
	case len(g.members) == 0:
		g.state = cgEmpty
	case g.groupEpoch > g.assignmentEpoch:
		g.state = cgAssigning
	default:
		g.state = cgStable
		for _, m := range g.members {
			if !m.isReconciledTo(g.assignmentEpoch) {
				g.state = cgReconciling
				break
			}
		}
	}
}

// computeSubscribedTopicNames is the topic counts with old replaced by
// new (either may be nil), regexes included.
func (g *ConsumerGroup) computeSubscribedTopicNames(old, m *ConsumerGroupMember) map[string]int {
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
	if old != nil && old.subscribedTopicRegex != "" {
		newRegex := ""
		if m != nil {
			newRegex = m.subscribedTopicRegex
		}
		if old.subscribedTopicRegex != newRegex && g.subscribedRegexes[old.subscribedTopicRegex] == 1 {
			// The last subscriber of the regex: its topics go.
			for _, t := range g.resolvedRegexes[old.subscribedTopicRegex].topics {
				inc(out, t, -1)
			}
		}
	}
	return out
}

// computeSubscriptionMetadata is the metadata of the subscribed topics
// that exist.
func computeSubscriptionMetadata(names map[string]int, topics Metadata) map[string]topicMetadata {
	out := make(map[string]topicMetadata, len(names))
	for name := range names {
		if t, ok := topics.TopicByName(name); ok {
			out[name] = topicMetadata{id: t.ID, name: t.Name, numPartitions: t.Partitions}
		}
	}
	return out
}

func equalSubscriptionMetadata(a, b map[string]topicMetadata) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func subscriptionMetadataRecord(groupID string, md map[string]topicMetadata) runtime.Record {
	names := make([]string, 0, len(md))
	for n := range md {
		names = append(names, n)
	}
	sort.Strings(names)
	topics := make([]topicMetadataRecord, 0, len(md))
	for _, n := range names {
		t := md[n]
		topics = append(topics, topicMetadataRecord{TopicID: t.id, TopicName: t.name, NumPartitions: t.numPartitions, PartitionMetadata: []partitionRacks{}})
	}
	return consumerGroupSubscriptionMetadataRecord(groupID, topics)
}

func (g *ConsumerGroup) hasMetadataExpired(nowMs int64) bool {
	return nowMs >= g.refreshDeadlineMs || g.groupEpoch < g.refreshDeadlineEpoch
}

func (g *ConsumerGroup) setMetadataRefreshDeadline(deadlineMs int64, epoch int32) {
	g.refreshDeadlineMs, g.refreshDeadlineEpoch = deadlineMs, epoch
}

func (g *ConsumerGroup) requestMetadataRefresh() { g.refreshDeadlineMs, g.refreshDeadlineEpoch = 0, 0 }

// computePreferredServerAssignor is the assignor most members ask for.
func (g *ConsumerGroup) computePreferredServerAssignor(old, m *ConsumerGroupMember) string {
	counts := make(map[string]int, len(g.serverAssignors))
	for k, v := range g.serverAssignors {
		counts[k] = v
	}
	if old != nil && old.serverAssignor != "" {
		inc(counts, old.serverAssignor, -1)
	}
	if m != nil && m.serverAssignor != "" {
		inc(counts, m.serverAssignor, 1)
	}
	return maxCount(counts)
}

func maxCount(counts map[string]int) string {
	best, n := "", 0
	for k, v := range counts {
		if v > n || v == n && k < best {
			best, n = k, v
		}
	}
	return best
}

func (g *ConsumerGroup) validateMemberEpoch(received, expected int32, classic bool) error {
	if received == expected {
		return nil
	}
	if classic {
		return apierr.Errorf(kerr.IllegalGeneration, "The received generation id %d does not match the expected member epoch %d.", received, expected)
	}
	return apierr.Errorf(kerr.StaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", received, expected)
}

func (g *ConsumerGroup) validateOffsetCommit(memberID string, _ *string, epoch int32, isTransactional bool, apiVersion int16) error {
	// From the admin client or a consumer without group management:
	// accepted while the group is empty.
	if epoch < 0 && len(g.members) == 0 {
		return nil
	}
	m, err := g.member(memberID)
	if err != nil {
		return err
	}
	if !isTransactional && !m.useClassicProtocol() && apiVersion < 9 {
		return apierr.Errorf(kerr.UnsupportedVersion, "OffsetCommit version 9 or above must be used by members using the modern group protocol")
	}
	return g.validateMemberEpoch(epoch, m.memberEpoch, m.useClassicProtocol())
}

func (g *ConsumerGroup) validateOffsetFetch(memberID *string, epoch int32) error {
	if memberID == nil && epoch < 0 {
		return nil
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m, err := g.member(id)
	if err != nil {
		return err
	}
	return g.validateMemberEpoch(epoch, m.memberEpoch, m.useClassicProtocol())
}

func (g *ConsumerGroup) validateOffsetDelete() error { return nil }

func (g *ConsumerGroup) validateDeleteGroup() error {
	if g.state != cgEmpty {
		return kerr.NonEmptyGroup
	}
	return nil
}

func (g *ConsumerGroup) isSubscribedToTopic(topic string) bool {
	return g.subscribedTopicNames[topic] > 0
}

func (g *ConsumerGroup) offsetExpirationBase() (func(OffsetAndMetadata) int64, bool) {
	return func(o OffsetAndMetadata) int64 { return o.CommitTimestamp }, true
}

// tombstones is createGroupTombstoneRecords: everything of the group, in
// Kafka's order (the regexes first, as Kafka 4 writes them).
func (g *ConsumerGroup) tombstones() []runtime.Record {
	return g.tombstonesReplacing("", "")
}

// tombstonesReplacing is createGroupTombstoneRecordsWithReplacedMember:
// the records of leaving are written under joining's id.
func (g *ConsumerGroup) tombstonesReplacing(leaving, joining string) []runtime.Record {
	ids := g.sortedMemberIDs()
	name := func(id string) string {
		if id == leaving && joining != "" {
			return joining
		}
		return id
	}
	var recs []runtime.Record
	for _, regex := range sortedKeys(g.resolvedRegexes) {
		recs = append(recs, consumerGroupRegexTombstone(g.groupID, regex))
	}
	for _, id := range ids {
		recs = append(recs, consumerGroupCurrentAssignmentTombstone(g.groupID, name(id)))
	}
	for _, id := range ids {
		recs = append(recs, consumerGroupTargetAssignmentTombstone(g.groupID, name(id)))
	}
	recs = append(recs, consumerGroupTargetAssignmentEpochTombstone(g.groupID))
	for _, id := range ids {
		recs = append(recs, consumerGroupMemberSubscriptionTombstone(g.groupID, name(id)))
	}
	recs = append(recs, consumerGroupSubscriptionMetadataTombstone(g.groupID), consumerGroupEpochTombstone(g.groupID))
	return recs
}

func (g *ConsumerGroup) asListed() kmsg.ListGroupsResponseGroup {
	l := kmsg.NewListGroupsResponseGroup()
	l.Group, l.ProtocolType, l.GroupState, l.GroupType = g.groupID, consumerProtocolType, g.state.String(), typeConsumer.String()
	return l
}

// allMembersUseClassicProtocolExcept: every member but id speaks the
// classic protocol, and id does not.
func (g *ConsumerGroup) allMembersUseClassicProtocolExcept(id string) bool {
	m := g.members[id]
	return m != nil && !m.useClassicProtocol() && g.numClassicMembers == len(g.members)-1
}

// supportsClassicProtocols: a classic member may join if its protocols
// intersect every classic member's.
func (g *ConsumerGroup) supportsClassicProtocols(protocolType string, names map[string]bool) bool {
	if protocolType != consumerProtocolType {
		return false
	}
	if g.isEmpty() {
		return len(names) > 0
	}
	for n := range names {
		if g.classicProtocols[n] == g.numClassicMembers {
			return true
		}
	}
	return false
}

// waitingOnUnreleasedPartition: the member waits for a partition another
// member still holds.
func (g *ConsumerGroup) waitingOnUnreleasedPartition(m *ConsumerGroupMember) bool {
	if m.state != memberUnreleasedPartitions {
		return false
	}
	for t, ps := range g.targetAssignmentOf(m.memberID) {
		for _, p := range ps {
			if !m.assigned.has(t, p) && g.currentPartitionEpoch(t, p) != -1 {
				return true
			}
		}
	}
	return false
}

// subscribedTopicIDs is what a member subscribes to, by topic id: its
// names and its regex's topics that exist in the subscription metadata.
func (g *ConsumerGroup) subscribedTopicIDs(m *ConsumerGroupMember, md map[string]topicMetadata) map[[16]byte]bool {
	out := map[[16]byte]bool{}
	for _, n := range m.subscribedTopicNames {
		if t, ok := md[n]; ok {
			out[t.id] = true
		}
	}
	if m.subscribedTopicRegex != "" {
		for _, n := range g.resolvedRegexes[m.subscribedTopicRegex].topics {
			if t, ok := md[n]; ok {
				out[t.id] = true
			}
		}
	}
	return out
}

func cloneStrings(ss []string) []string { return slices.Clone(ss) }
