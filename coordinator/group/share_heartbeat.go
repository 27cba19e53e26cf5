package group

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// The share groups' ShareGroupHeartbeat (KIP-932; Kafka 4.2's
// GroupMetadataManager.shareGroupHeartbeat): a member joins with epoch 0
// and its subscription, heartbeats with its epoch, leaves with -1. As for
// consumer groups every decision is a record: the member's subscription,
// the group epoch (with the metadata hash of the subscribed topics), the
// target assignment, the member's current assignment. A share group has
// no revocation: a member moves to its target at once.
//
// Partitions are assigned only once their share-group state is
// initialized. A heartbeat that sees subscribed partitions without state
// writes them as initializing (ShareGroupStatePartitionMetadata) and
// returns a shareStateInit; the Service hands it to the persister
// (InitializeShareGroupState) and, once that succeeded, writes them as
// initialized. The next heartbeat sees initialized partitions that no one
// is assigned, bumps the group epoch and assigns them.

// shareHeartbeatOutcome is what a share heartbeat answers, plus the share
// state it asks to initialize.
type shareHeartbeatOutcome struct {
	resp *kmsg.ShareGroupHeartbeatResponse
	init *shareStateInit
}

type shareHeartbeatResult = runtime.Result[shareHeartbeatOutcome]

// shareStateInit is InitializeShareGroupStateParameters: the partitions
// whose share-group state to initialize, at the group's epoch, with start
// offset -1 (the share-partition leader then applies share.auto.offset.reset).
type shareStateInit struct {
	groupID    string
	groupEpoch int32
	topics     map[[16]byte][]int32
}

func shareError(code *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.ErrorCode = code.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// validateShareGroupHeartbeat is throwIfShareGroupHeartbeatRequestIsInvalid.
func validateShareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) error {
	empty := func(s string) bool { return strings.TrimSpace(s) == "" }
	switch {
	case empty(req.MemberID):
		return invalidRequest("MemberId can't be empty.")
	case empty(req.GroupID):
		return invalidRequest("GroupId can't be empty.")
	case req.RackID != nil && empty(*req.RackID):
		return invalidRequest("RackId can't be empty.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return invalidRequest("SubscribedTopicNames must be set in first request.")
	case req.MemberEpoch < leaveGroupMemberEpoch:
		return invalidRequest("MemberEpoch is invalid.")
	}
	return nil
}

// shareGroupHeartbeat handles a ShareGroupHeartbeat on the shard.
func (s *Shard) shareGroupHeartbeat(rc RequestContext, req *kmsg.ShareGroupHeartbeatRequest) (shareHeartbeatResult, error) {
	if err := validateShareGroupHeartbeat(req); err != nil {
		return shareHeartbeatResult{}, err
	}
	if req.MemberEpoch == leaveGroupMemberEpoch {
		return s.shareGroupLeave(req.GroupID, req.MemberID, req.MemberEpoch)
	}
	return s.shareGroupJoinOrHeartbeat(rc, req)
}

// getOrMaybeCreateShareGroup: a group of another type is GROUP_ID_NOT_FOUND
// (Kafka converts nothing to or from share groups).
func (s *Shard) getOrMaybeCreateShareGroup(id string, create bool) (*ShareGroup, error) {
	switch g := s.groups[id].(type) {
	case *ShareGroup:
		return g, nil
	case nil:
		if !create {
			return nil, apierr.Errorf(kerr.GroupIDNotFound, "Share group %s not found.", id)
		}
		return newShareGroup(id), nil
	}
	return nil, apierr.Errorf(kerr.GroupIDNotFound, "Group %s is not a share group.", id)
}

// shareGroup is the share group id, or GROUP_ID_NOT_FOUND.
func (s *Shard) shareGroup(id string) (*ShareGroup, error) {
	switch g := s.groups[id].(type) {
	case *ShareGroup:
		return g, nil
	case nil:
		return nil, groupIDNotFound(id)
	}
	return nil, apierr.Errorf(kerr.GroupIDNotFound, "Group %s is not a share group.", id)
}

func (s *Shard) throwIfShareGroupIsFull(g *ShareGroup, memberID string) error {
	if g.numMembers() >= s.cfg.ShareMaxSize && (memberID == "" || !g.hasMember(memberID)) {
		return apierr.Errorf(kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of %d members.", s.cfg.ShareMaxSize)
	}
	return nil
}

// shareMemberEpochValid is throwIfShareGroupMemberEpochIsInvalid: a member
// may come back with its previous epoch (the response with the new one
// was lost).
func shareMemberEpochValid(m *ShareGroupMember, received int32) error {
	if received > m.memberEpoch {
		return apierr.Errorf(kerr.FencedMemberEpoch, "The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.memberEpoch)
	}
	if received < m.memberEpoch && received != m.previousMemberEpoch {
		return apierr.Errorf(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", received, m.memberEpoch, m.previousMemberEpoch)
	}
	return nil
}

func (s *Shard) shareGroupJoinOrHeartbeat(rc RequestContext, req *kmsg.ShareGroupHeartbeatRequest) (shareHeartbeatResult, error) {
	var res shareHeartbeatResult
	now := s.now().UnixMilli()
	create := req.MemberEpoch == 0
	g, err := s.getOrMaybeCreateShareGroup(req.GroupID, create)
	if err != nil {
		return res, err
	}
	if err := s.throwIfShareGroupIsFull(g, req.MemberID); err != nil {
		return res, err
	}
	m, err := g.getOrMaybeCreateMember(req.MemberID, create)
	if err != nil {
		return res, err
	}
	if err := shareMemberEpochValid(m, req.MemberEpoch); err != nil {
		return res, err
	}
	if create && !g.hasMember(req.MemberID) {
		s.log.Info("member joins the share group", "group", g.groupID, "member", req.MemberID)
	}

	// 1. The member, its subscription, the group epoch.
	updated := m.copy()
	if req.RackID != nil {
		updated.rackID = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		updated.subscribedTopicNames = sortedUnique(req.SubscribedTopicNames)
	}
	updated.clientID, updated.clientHost = rc.ClientID, rc.ClientHost

	var records []runtime.Record
	bump := false
	if !updated.equal(m) {
		records = append(records, shareGroupMemberSubscriptionRecord(g.groupID, updated.memberID, updated.subscriptionValue()))
		bump = !equalStrings(updated.subscribedTopicNames, m.subscribedTopicNames)
	}
	bump = bump || s.initializedAssignmentPending(g)

	epoch, names := g.groupEpoch, g.subscribedTopicNames
	if bump || g.hasMetadataExpired(now) {
		names = g.computeSubscribedTopicNames(m, updated)
		hash := computeMetadataHash(names, s.topics)
		if hash != g.metadataHash {
			bump = true
		}
		if bump {
			epoch++
			records = append(records, shareGroupEpochRecord(g.groupID, epoch, hash))
			s.log.Info("bumped share group epoch", "group", g.groupID, "epoch", epoch)
			s.metrics.shareRebalance()
		}
		g.refreshDeadlineMs, g.refreshDeadlineEpoch = now+metadataRefreshInterval.Milliseconds(), epoch
	}

	// 2. The target assignment, if the epoch moved past it.
	targetEpoch, target := g.assignmentEpoch, g.targetAssignmentOf(updated.memberID)
	if epoch > g.assignmentEpoch {
		target, records = s.updateShareTargetAssignment(g, epoch, updated, records)
		targetEpoch = epoch
	}

	// 3. The member moves to its target.
	updated, records = s.maybeReconcileShareMember(g, updated, targetEpoch, target, bump, records)
	s.scheduleShareSessionTimeout(g.groupID, updated.memberID)

	id := updated.memberID
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.MemberID, resp.MemberEpoch = &id, updated.memberEpoch
	resp.HeartbeatIntervalMillis = int32(s.shareHeartbeatInterval(g.groupID).Milliseconds())
	if req.MemberEpoch == 0 || req.SubscribedTopicNames != nil || !m.assigned.equal(updated.assigned) {
		resp.Assignment = shareHeartbeatAssignment(updated.assigned)
	}
	var init *shareStateInit
	init, records = s.maybeInitializeShareState(g, epoch, names, records, now)
	res.Records, res.Response = records, shareHeartbeatOutcome{resp: resp, init: init}
	return res, nil
}

func shareHeartbeatAssignment(a assignment) *kmsg.ShareGroupHeartbeatResponseAssignment {
	ra := kmsg.NewShareGroupHeartbeatResponseAssignment()
	out := &ra
	out.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, t := range a.sortedTopics() {
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = t, append([]int32(nil), a[t]...)
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

// initializedAssignmentPending: some subscribed topic has initialized
// partitions that differ from those in the target assignment, so the
// assignment must be computed again.
func (s *Shard) initializedAssignmentPending(g *ShareGroup) bool {
	if g.isEmpty() || g.stateMetadata == nil || len(g.stateMetadata.initialized) == 0 || len(g.subscribedTopicNames) == 0 {
		return false
	}
	assigned := map[[16]byte]map[int32]bool{}
	for _, a := range g.targetAssignment {
		for t, ps := range a {
			for _, p := range ps {
				addTo(assigned, t, p)
			}
		}
	}
	for id, t := range g.stateMetadata.initialized {
		if g.subscribedTopicNames[t.name] == 0 {
			continue
		}
		got := assigned[id]
		if len(got) != len(t.partitions) {
			return true
		}
		for _, p := range t.partitions {
			if !got[p] {
				return true
			}
		}
	}
	return false
}

// updateShareTargetAssignment computes the group's target assignment at
// epoch with updated in place of its old self, and returns the member's.
func (s *Shard) updateShareTargetAssignment(g *ShareGroup, epoch int32, updated *ShareGroupMember, records []runtime.Record) (assignment, []runtime.Record) {
	members := map[string]*ShareGroupMember{}
	for id, m := range g.members {
		members[id] = m
	}
	members[updated.memberID] = updated
	ids := sortedKeys(members)
	spec := shareAssignSpec{partitions: map[[16]byte]int32{}}
	initialized := g.initializedPartitions()
	spec.assignable = func(t [16]byte, p int32) bool {
		_, ok := sliceIndex(initialized[t], p)
		return ok
	}
	for _, id := range ids {
		m := members[id]
		sub := g.subscribedTopicIDs(m, s.topics)
		for t := range sub {
			if info, ok := s.topics.TopicByID(t); ok {
				spec.partitions[t] = info.Partitions
			}
		}
		spec.members = append(spec.members, shareAssignMember{id: id, subscribed: sub, current: g.targetAssignmentOf(id)})
	}
	start := time.Now()
	targets := simpleAssign(spec)
	s.log.Debug("computed a new share target assignment", "group", g.groupID, "epoch", epoch, "assignor", "simple", "took", time.Since(start))
	for _, id := range ids {
		if old, had := g.targetAssignment[id]; !had || !old.equal(targets[id]) {
			records = append(records, shareGroupTargetAssignmentRecord(g.groupID, id, targets[id].toRecord()))
		}
	}
	records = append(records, shareGroupTargetAssignmentEpochRecord(g.groupID, epoch))
	if a, ok := targets[updated.memberID]; ok {
		return a, records
	}
	return assignment{}, records
}

func sliceIndex(ps []int32, p int32) (int, bool) {
	for i, x := range ps {
		if x == p {
			return i, true
		}
	}
	return -1, false
}

// maybeReconcileShareMember is ShareGroupAssignmentBuilder: at a new
// target epoch the member takes its target at once, restricted to the
// topics it subscribes to (as also when its subscription changed).
func (s *Shard) maybeReconcileShareMember(g *ShareGroup, m *ShareGroupMember, targetEpoch int32, target assignment, subscriptionChanged bool, records []runtime.Record) (*ShareGroupMember, []runtime.Record) {
	if !subscriptionChanged && m.isReconciledTo(targetEpoch) {
		return m, records
	}
	updated := m.copy()
	switch {
	case targetEpoch != m.memberEpoch:
		updated.state = memberStable
		updated.assigned = s.filterSubscribed(updated, target)
		updated.previousMemberEpoch, updated.memberEpoch = m.memberEpoch, targetEpoch
	case subscriptionChanged:
		updated.assigned = s.filterSubscribed(updated, target)
	default:
		return m, records
	}
	if updated.equal(m) {
		return m, records
	}
	records = append(records, shareGroupCurrentAssignmentRecord(g.groupID, updated.memberID, updated.assignmentValue()))
	s.log.Info("share group member has a new assignment", "group", g.groupID, "member", updated.memberID,
		"epoch", updated.memberEpoch, "previous_epoch", updated.previousMemberEpoch, "partitions", updated.assigned.count())
	return updated, records
}

func (s *Shard) filterSubscribed(m *ShareGroupMember, a assignment) assignment {
	out := assignment{}
	for _, n := range m.subscribedTopicNames {
		if t, ok := s.topics.TopicByName(n); ok {
			if ps, ok := a[t.ID]; ok {
				out[t.ID] = ps
			}
		}
	}
	return out
}

// shareGroupLeave handles epoch -1.
func (s *Shard) shareGroupLeave(groupID, memberID string, epoch int32) (shareHeartbeatResult, error) {
	g, err := s.shareGroup(groupID)
	if err != nil {
		return shareHeartbeatResult{}, err
	}
	m, err := g.getOrMaybeCreateMember(memberID, false)
	if err != nil {
		return shareHeartbeatResult{}, err
	}
	s.log.Info("member left the share group", "group", groupID, "member", memberID)
	id := memberID
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.MemberID, resp.MemberEpoch = &id, epoch
	return shareHeartbeatResult{Records: s.shareGroupFenceMember(g, m), Response: shareHeartbeatOutcome{resp: resp}}, nil
}

// shareGroupFenceMember removes a member and bumps the group epoch.
func (s *Shard) shareGroupFenceMember(g *ShareGroup, m *ShareGroupMember) []runtime.Record {
	records := []runtime.Record{
		shareGroupCurrentAssignmentTombstone(g.groupID, m.memberID),
		shareGroupTargetAssignmentTombstone(g.groupID, m.memberID),
		shareGroupMemberSubscriptionTombstone(g.groupID, m.memberID),
	}
	hash := computeMetadataHash(g.computeSubscribedTopicNames(m, nil), s.topics)
	records = append(records, shareGroupEpochRecord(g.groupID, g.groupEpoch+1, hash))
	s.metrics.shareRebalance()
	s.timer.Cancel(consumerSessionTimeoutKey(g.groupID, m.memberID))
	return records
}

// scheduleShareSessionTimeout (re)starts the member's session: it is
// fenced unless it heartbeats within share.session.timeout.ms.
func (s *Shard) scheduleShareSessionTimeout(groupID, memberID string) {
	s.timer.Schedule(consumerSessionTimeoutKey(groupID, memberID), s.shareSessionTimeout(groupID), func() (voidResult, error) {
		g, ok := s.groups[groupID].(*ShareGroup)
		if !ok || g.members[memberID] == nil {
			return emptyResult, nil
		}
		s.log.Info("member fenced from the share group", "group", groupID, "member", memberID, "reason", "the member session expired")
		s.metrics.consumerMemberExpired()
		return voidResult{Records: s.shareGroupFenceMember(g, g.members[memberID])}, nil
	})
}

// onShareGroupLoaded restarts the members' sessions after a load.
func (s *Shard) onShareGroupLoaded(g *ShareGroup) {
	for _, id := range g.sortedMemberIDs() {
		s.scheduleShareSessionTimeout(g.groupID, id)
	}
}
