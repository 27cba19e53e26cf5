package group

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// classicState is Kafka's ClassicGroupState.
type classicState int8

const (
	stateEmpty classicState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s classicState) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

// validPrevious is ClassicGroupState's valid previous states.
func (s classicState) validPrevious(from classicState) bool {
	switch s {
	case stateEmpty:
		return from == statePreparingRebalance
	case statePreparingRebalance:
		return from == stateStable || from == stateCompletingRebalance || from == stateEmpty
	case stateCompletingRebalance:
		return from == statePreparingRebalance
	case stateStable:
		return from == stateCompletingRebalance
	case stateDead:
		return true
	}
	return false
}

// consumerProtocolType is ConsumerProtocol.PROTOCOL_TYPE.
const consumerProtocolType = "consumer"

type protocol struct {
	name     string
	metadata []byte
}

// classicMember is Kafka's ClassicGroupMember. awaitingJoin and
// awaitingSync hold the responses of a JoinGroup or SyncGroup parked until
// the rebalance moves on.
type classicMember struct {
	memberID           string
	instanceID         *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []protocol
	assignment         []byte
	awaitingJoin       func(*kmsg.JoinGroupResponse)
	awaitingSync       func(*kmsg.SyncGroupResponse)
	isNew              bool
}

func (m *classicMember) isStatic() bool       { return m.instanceID != nil }
func (m *classicMember) isAwaitingJoin() bool { return m.awaitingJoin != nil }
func (m *classicMember) isAwaitingSync() bool { return m.awaitingSync != nil }

// metadata returns the member's metadata for a protocol (nil if it does
// not support it).
func (m *classicMember) metadata(protocolName string) []byte {
	for _, p := range m.protocols {
		if p.name == protocolName {
			return p.metadata
		}
	}
	return nil
}

// hasSatisfiedHeartbeat: a member awaiting a rebalance needs no heartbeat,
// unless it is new (a new member's join may time out).
func (m *classicMember) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.isAwaitingJoin() || m.isAwaitingSync()
}

// matches reports whether the member's protocols are exactly these.
func (m *classicMember) matches(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && bytes.Equal(a.metadata, b.metadata)
	})
}

// vote is the member's first protocol among the candidates.
func (m *classicMember) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.name] {
			return p.name
		}
	}
	return ""
}

func (m *classicMember) hasAssignment() bool { return len(m.assignment) > 0 }

func (m *classicMember) describe(protocolName string, withMetadata bool) kmsg.DescribeGroupsResponseGroupMember {
	d := kmsg.NewDescribeGroupsResponseGroupMember()
	d.MemberID, d.InstanceID, d.ClientID, d.ClientHost = m.memberID, m.instanceID, m.clientID, m.clientHost
	d.MemberAssignment = m.assignment
	if d.MemberAssignment == nil {
		d.MemberAssignment = []byte{}
	}
	d.ProtocolMetadata = []byte{}
	if withMetadata {
		if md := m.metadata(protocolName); md != nil {
			d.ProtocolMetadata = md
		}
	}
	return d
}

func protocolsFromRequest(ps []kmsg.JoinGroupRequestProtocol) []protocol {
	out := make([]protocol, len(ps))
	for i, p := range ps {
		// Copied: the request's bytes alias the connection's frame
		// buffer, reused once the response is sent.
		out[i] = protocol{name: p.Name, metadata: bytes.Clone(p.Metadata)}
	}
	return out
}

// ClassicGroup is Kafka's ClassicGroup: a group of the classic protocol
// (JoinGroup/SyncGroup), or a "simple" group that only stores offsets.
// Members are kept in join order, which is also the order a new leader is
// picked in and the order of the GroupMetadata record.
type ClassicGroup struct {
	groupID               string
	state                 classicState
	previousState         classicState
	currentStateTimestamp int64 // ms, -1 if none
	protocolType          string
	protocolName          string
	generationID          int32
	leaderID              string
	members               map[string]*classicMember
	order                 []string // member ids in join order
	staticMembers         map[string]string
	pendingJoinMembers    map[string]bool
	pendingSyncMembers    map[string]bool
	numAwaitingJoin       int
	supportedProtocols    map[string]int
	subscribedTopics      map[string]bool // nil: unknown
	newMemberAdded        bool
	now                   func() time.Time
}

func newClassicGroup(id string, now func() time.Time) *ClassicGroup {
	return &ClassicGroup{
		groupID:               id,
		state:                 stateEmpty,
		previousState:         stateEmpty,
		currentStateTimestamp: -1,
		members:               map[string]*classicMember{},
		staticMembers:         map[string]string{},
		pendingJoinMembers:    map[string]bool{},
		pendingSyncMembers:    map[string]bool{},
		supportedProtocols:    map[string]int{},
		now:                   now,
	}
}

func (g *ClassicGroup) id() string          { return g.groupID }
func (g *ClassicGroup) kind() groupType     { return typeClassic }
func (g *ClassicGroup) stateString() string { return g.state.String() }
func (g *ClassicGroup) isEmpty() bool       { return g.state == stateEmpty }
func (g *ClassicGroup) is(s classicState) bool {
	return g.state == s
}
func (g *ClassicGroup) isLeader(memberID string) bool {
	return g.leaderID != "" && g.leaderID == memberID
}
func (g *ClassicGroup) hasMember(memberID string) bool {
	_, ok := g.members[memberID]
	return ok
}
func (g *ClassicGroup) numMembers() int { return len(g.members) }

// isSimpleGroup: a group that only stores offsets.
func (g *ClassicGroup) isSimpleGroup() bool {
	return g.protocolType == "" && g.isEmpty() && len(g.pendingJoinMembers) == 0
}

func (g *ClassicGroup) usesConsumerGroupProtocol() bool {
	return g.protocolType == consumerProtocolType
}

func (g *ClassicGroup) orderedMembers() []*classicMember {
	out := make([]*classicMember, 0, len(g.order))
	for _, id := range g.order {
		out = append(out, g.members[id])
	}
	return out
}

// add adds a member, which must support the group's protocol type and
// one of its protocols; join, if not nil, is its parked JoinGroup.
func (g *ClassicGroup) add(m *classicMember, join func(*kmsg.JoinGroupResponse)) {
	if m.instanceID != nil {
		g.staticMembers[*m.instanceID] = m.memberID
	}
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leaderID == "" {
		g.leaderID = m.memberID
	}
	g.members[m.memberID] = m
	g.order = append(g.order, m.memberID)
	g.incrementSupportedProtocols(m)
	m.awaitingJoin = join
	if m.isAwaitingJoin() {
		g.numAwaitingJoin++
	}
	delete(g.pendingJoinMembers, m.memberID)
}

func (g *ClassicGroup) remove(memberID string) {
	if m := g.members[memberID]; m != nil {
		delete(g.members, memberID)
		g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == memberID })
		g.decrementSupportedProtocols(m)
		if m.isAwaitingJoin() {
			g.numAwaitingJoin--
		}
		if m.instanceID != nil {
			delete(g.staticMembers, *m.instanceID)
		}
	}
	if g.isLeader(memberID) {
		g.leaderID = ""
		if len(g.order) > 0 {
			g.leaderID = g.order[0]
		}
	}
	delete(g.pendingJoinMembers, memberID)
	delete(g.pendingSyncMembers, memberID)
}

// maybeElectNewJoinedLeader replaces a leader that did not rejoin with a
// member that did; false if no member rejoined.
func (g *ClassicGroup) maybeElectNewJoinedLeader() bool {
	if g.leaderID == "" {
		return false
	}
	leader := g.members[g.leaderID]
	if leader.isAwaitingJoin() {
		return true
	}
	for _, m := range g.orderedMembers() {
		if m.isAwaitingJoin() {
			g.leaderID = m.memberID
			return true
		}
	}
	return false
}

// replaceStaticMember gives a static member a new member id: the old
// member's parked requests are answered FENCED_INSTANCE_ID and the new
// member inherits its place, timeouts, protocols and assignment.
func (g *ClassicGroup) replaceStaticMember(instanceID, oldMemberID, newMemberID string) *classicMember {
	old := g.members[oldMemberID]
	if old == nil {
		panic(fmt.Sprintf("cannot replace non-existing member id %s", oldMemberID))
	}
	delete(g.members, oldMemberID)
	g.completeJoin(old, &kmsg.JoinGroupResponse{ErrorCode: kerr.FencedInstanceID.Code, Generation: -1, MemberID: oldMemberID})
	g.completeSync(old, &kmsg.SyncGroupResponse{ErrorCode: kerr.FencedInstanceID.Code, MemberAssignment: []byte{}})
	m := &classicMember{
		memberID: newMemberID, instanceID: old.instanceID, clientID: old.clientID, clientHost: old.clientHost,
		rebalanceTimeoutMs: old.rebalanceTimeoutMs, sessionTimeoutMs: old.sessionTimeoutMs,
		protocolType: old.protocolType, protocols: old.protocols, assignment: old.assignment,
	}
	g.members[newMemberID] = m
	for i, id := range g.order {
		if id == oldMemberID {
			g.order[i] = newMemberID
		}
	}
	if g.isLeader(oldMemberID) {
		g.leaderID = newMemberID
	}
	g.staticMembers[instanceID] = newMemberID
	return m
}

func (g *ClassicGroup) isPendingMember(memberID string) bool { return g.pendingJoinMembers[memberID] }
func (g *ClassicGroup) addPendingMember(memberID string)     { g.pendingJoinMembers[memberID] = true }
func (g *ClassicGroup) addPendingSyncMember(memberID string) { g.pendingSyncMembers[memberID] = true }
func (g *ClassicGroup) removePendingSyncMember(memberID string) {
	delete(g.pendingSyncMembers, memberID)
}
func (g *ClassicGroup) hasReceivedSyncFromAllMembers() bool { return len(g.pendingSyncMembers) == 0 }
func (g *ClassicGroup) clearPendingSyncMembers()            { clear(g.pendingSyncMembers) }
func (g *ClassicGroup) hasStaticMember(instanceID string) bool {
	_, ok := g.staticMembers[instanceID]
	return ok
}
func (g *ClassicGroup) staticMemberID(instanceID string) string { return g.staticMembers[instanceID] }

// hasAllMembersJoined: every member is parked in JoinGroup and no member
// id handed out (MEMBER_ID_REQUIRED) is still expected.
func (g *ClassicGroup) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin && len(g.pendingJoinMembers) == 0
}

func (g *ClassicGroup) notYetRejoinedMembers() []*classicMember {
	var out []*classicMember
	for _, m := range g.orderedMembers() {
		if !m.isAwaitingJoin() {
			out = append(out, m)
		}
	}
	return out
}

// rebalanceTimeoutMs is the largest rebalance timeout of the members.
func (g *ClassicGroup) rebalanceTimeoutMs() int32 {
	var t int32
	for _, m := range g.members {
		t = max(t, m.rebalanceTimeoutMs)
	}
	return t
}

// generateMemberID is ClassicGroup.generateMemberId: the instance id or
// client id, a dash, a random UUID.
func (g *ClassicGroup) generateMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	return prefix + "-" + randomUUIDString()
}

// validateMember checks a member id (and instance id): UNKNOWN_MEMBER_ID
// or FENCED_INSTANCE_ID.
func (g *ClassicGroup) validateMember(memberID string, instanceID *string, operation string) error {
	if instanceID != nil {
		existing, ok := g.staticMembers[*instanceID]
		if !ok {
			return apierr.Errorf(kerr.UnknownMemberID, "Static member with group instance id %s is unknown to group %s.", *instanceID, g.groupID)
		}
		if existing != memberID {
			return apierr.Errorf(kerr.FencedInstanceID, "Request memberId=%s for static member with groupInstanceId=%s is fenced by existing memberId=%s during operation %s.", memberID, *instanceID, existing, operation)
		}
	}
	if !g.hasMember(memberID) {
		return apierr.Errorf(kerr.UnknownMemberID, "Member %s is unknown to group %s.", memberID, g.groupID)
	}
	return nil
}

func (g *ClassicGroup) validateOffsetCommit(memberID string, instanceID *string, generation int32, isTransactional bool, apiVersion int16) error {
	if g.is(stateDead) {
		return kerr.CoordinatorNotAvailable
	}
	if generation < 0 && g.is(stateEmpty) {
		return nil // a commit from outside any group (a "simple" commit)
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		op := "offset-commit"
		if isTransactional {
			op = "txn-offset-commit"
		}
		if err := g.validateMember(memberID, instanceID, op); err != nil {
			return err
		}
		if generation != g.generationID {
			return apierr.Errorf(kerr.IllegalGeneration, "Generation %d of member %s is not the group's current generation %d.", generation, memberID, g.generationID)
		}
	} else if !isTransactional && !g.is(stateEmpty) {
		return apierr.Errorf(kerr.UnknownMemberID, "Offset commits without a member id are only accepted when group %s is empty.", g.groupID)
	}
	if !isTransactional && g.is(stateCompletingRebalance) {
		return kerr.RebalanceInProgress
	}
	return nil
}

func (g *ClassicGroup) validateOffsetFetch(*string, int32) error {
	if g.is(stateDead) {
		return apierr.Errorf(kerr.GroupIDNotFound, "Group %s is in dead state.", g.groupID)
	}
	return nil
}

func (g *ClassicGroup) validateOffsetDelete() error {
	switch g.state {
	case stateDead:
		return apierr.Errorf(kerr.GroupIDNotFound, "Group %s is in dead state.", g.groupID)
	case stateStable, statePreparingRebalance, stateCompletingRebalance:
		if !g.usesConsumerGroupProtocol() {
			return kerr.NonEmptyGroup
		}
	}
	return nil
}

func (g *ClassicGroup) validateDeleteGroup() error {
	switch g.state {
	case stateDead:
		return apierr.Errorf(kerr.GroupIDNotFound, "Group %s is in dead state.", g.groupID)
	case stateStable, statePreparingRebalance, stateCompletingRebalance:
		return kerr.NonEmptyGroup
	}
	return nil
}

func (g *ClassicGroup) tombstones() []runtime.Record {
	return []runtime.Record{groupMetadataTombstone(g.groupID)}
}

// offsetExpirationBase is ClassicGroup.offsetExpirationCondition.
func (g *ClassicGroup) offsetExpirationBase() (func(OffsetAndMetadata) int64, bool) {
	commitTime := func(o OffsetAndMetadata) int64 { return o.CommitTimestamp }
	if g.protocolType == "" {
		return commitTime, true // a simple group
	}
	if g.is(stateEmpty) {
		// Offsets expire retention after the group became empty.
		return func(o OffsetAndMetadata) int64 {
			if g.currentStateTimestamp >= 0 {
				return g.currentStateTimestamp
			}
			return o.CommitTimestamp
		}, true
	}
	if g.usesConsumerGroupProtocol() && g.subscribedTopics != nil && g.is(stateStable) {
		return commitTime, true // offsets of topics no longer subscribed
	}
	return nil, false
}

func (g *ClassicGroup) isSubscribedToTopic(topic string) bool {
	if g.subscribedTopics == nil {
		return g.usesConsumerGroupProtocol()
	}
	return g.subscribedTopics[topic]
}

func (g *ClassicGroup) asListed() kmsg.ListGroupsResponseGroup {
	l := kmsg.NewListGroupsResponseGroup()
	l.Group, l.ProtocolType, l.GroupState, l.GroupType = g.groupID, g.protocolType, g.state.String(), typeClassic.String()
	return l
}

// canRebalance: PreparingRebalance may be entered from the current state.
func (g *ClassicGroup) canRebalance() bool { return statePreparingRebalance.validPrevious(g.state) }

func (g *ClassicGroup) transitionTo(s classicState) {
	if !s.validPrevious(g.state) {
		panic(fmt.Sprintf("group %s should not move from %s to %s", g.groupID, g.state, s))
	}
	g.previousState = g.state
	g.state = s
	g.currentStateTimestamp = g.now().UnixMilli()
}

// selectProtocol is the protocol supported by every member that gets the
// most votes (a member votes for its first supported candidate).
func (g *ClassicGroup) selectProtocol() string {
	candidates := map[string]bool{}
	for name, n := range g.supportedProtocols {
		if n == len(g.members) {
			candidates[name] = true
		}
	}
	votes := map[string]int{}
	var order []string
	for _, m := range g.orderedMembers() {
		v := m.vote(candidates)
		if votes[v] == 0 {
			order = append(order, v)
		}
		votes[v]++
	}
	best, bestVotes := "", -1
	for _, p := range order {
		if votes[p] > bestVotes {
			best, bestVotes = p, votes[p]
		}
	}
	return best
}

func (g *ClassicGroup) incrementSupportedProtocols(m *classicMember) {
	for _, p := range m.protocols {
		g.supportedProtocols[p.name]++
	}
}

func (g *ClassicGroup) decrementSupportedProtocols(m *classicMember) {
	for _, p := range m.protocols {
		g.supportedProtocols[p.name]--
	}
}

// supportsProtocols: an empty group accepts any non-empty protocol type
// and protocol list; otherwise the type must match and one protocol must
// be supported by every member.
func (g *ClassicGroup) supportsProtocols(protocolType string, ps []protocol) bool {
	if g.is(stateEmpty) {
		return protocolType != "" && len(ps) > 0
	}
	if g.protocolType != protocolType {
		return false
	}
	for _, p := range ps {
		if g.supportedProtocols[p.name] == len(g.members) {
			return true
		}
	}
	return false
}

// computeSubscribedTopics: for the consumer protocol, the union of the
// members' subscriptions (nil when unknown).
func (g *ClassicGroup) computeSubscribedTopics() map[string]bool {
	if g.protocolType != consumerProtocolType {
		return nil
	}
	if len(g.members) == 0 {
		return map[string]bool{}
	}
	if g.protocolName == "" {
		return nil
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(m.metadata(g.protocolName)); err != nil {
			return nil // not the consumer protocol's embedded format
		}
		for _, t := range sub.Topics {
			topics[t] = true
		}
	}
	return topics
}

// updateMember replaces a member's protocols and timeouts; join parks its
// JoinGroup (nil: not parked).
func (g *ClassicGroup) updateMember(m *classicMember, ps []protocol, rebalanceTimeoutMs, sessionTimeoutMs int32, join func(*kmsg.JoinGroupResponse)) {
	g.decrementSupportedProtocols(m)
	m.protocols = ps
	g.incrementSupportedProtocols(m)
	m.rebalanceTimeoutMs = rebalanceTimeoutMs
	m.sessionTimeoutMs = sessionTimeoutMs
	if join != nil && !m.isAwaitingJoin() {
		g.numAwaitingJoin++
	} else if join == nil && m.isAwaitingJoin() {
		g.numAwaitingJoin--
	}
	m.awaitingJoin = join
}

// completeJoin answers a member's parked JoinGroup, if any.
func (g *ClassicGroup) completeJoin(m *classicMember, resp *kmsg.JoinGroupResponse) bool {
	if !m.isAwaitingJoin() {
		return false
	}
	f := m.awaitingJoin
	m.awaitingJoin = nil
	g.numAwaitingJoin--
	f(resp)
	return true
}

// completeSync answers a member's parked SyncGroup, if any.
func (g *ClassicGroup) completeSync(m *classicMember, resp *kmsg.SyncGroupResponse) bool {
	if !m.isAwaitingSync() {
		return false
	}
	f := m.awaitingSync
	m.awaitingSync = nil
	f(resp)
	return true
}

// initNextGeneration bumps the generation and moves to
// CompletingRebalance (or Empty without members).
func (g *ClassicGroup) initNextGeneration() {
	g.generationID++
	if len(g.members) > 0 {
		g.protocolName = g.selectProtocol()
		g.subscribedTopics = g.computeSubscribedTopics()
		g.transitionTo(stateCompletingRebalance)
	} else {
		g.protocolName = ""
		g.subscribedTopics = g.computeSubscribedTopics()
		g.transitionTo(stateEmpty)
	}
	g.clearPendingSyncMembers()
}

// currentMembers is the member list the leader gets in its JoinGroup
// response.
func (g *ClassicGroup) currentMembers() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.orderedMembers() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID = m.memberID, m.instanceID
		jm.ProtocolMetadata = m.metadata(g.protocolName)
		if jm.ProtocolMetadata == nil {
			jm.ProtocolMetadata = []byte{}
		}
		out = append(out, jm)
	}
	return out
}

// groupAssignment is every member's assignment.
func (g *ClassicGroup) groupAssignment() map[string][]byte {
	a := make(map[string][]byte, len(g.members))
	for id, m := range g.members {
		a[id] = m.assignment
	}
	return a
}

// joinResponse is a successful JoinGroup response for member in the
// current generation.
func (g *ClassicGroup) joinResponse(memberID string, withMembers bool) *kmsg.JoinGroupResponse {
	r := &kmsg.JoinGroupResponse{
		Generation:   g.generationID,
		ProtocolType: optString(g.protocolType),
		Protocol:     optString(g.protocolName),
		LeaderID:     g.leaderID,
		MemberID:     memberID,
		Members:      []kmsg.JoinGroupResponseMember{},
	}
	if withMembers {
		r.Members = g.currentMembers()
	}
	return r
}
