package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime"
)

// The classic protocol's JoinGroup (Kafka's GroupMetadataManager
// classicGroupJoin and what it calls). The group's in-memory state changes
// directly; GroupMetadata records are written with NoReplay to make the
// generation durable.

type voidResult = runtime.Result[runtime.Void]

var emptyResult voidResult

// RequestContext is what the coordinator knows of a request besides its
// body.
type RequestContext struct {
	ClientID string
	// ClientHost is the client's address as Kafka shows it
	// (InetAddress.toString(): "/127.0.0.1").
	ClientHost string
	APIVersion int16
}

// joinReason is JoinGroupRequest.joinReason.
func joinReason(req *kmsg.JoinGroupRequest) string {
	if req.Reason != nil && *req.Reason != "" {
		return *req.Reason
	}
	return "not provided"
}

// classicGroupJoin handles a JoinGroup; respond is called exactly once,
// now or when the rebalance completes.
func (s *Shard) classicGroupJoin(rc RequestContext, req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) (voidResult, error) {
	if g, ok := s.groups[req.Group]; ok {
		if cg, ok := g.(*ConsumerGroup); ok && !cg.isEmpty() {
			return s.classicGroupJoinToConsumerGroup(cg, rc, req, respond)
		}
		if _, ok := g.(*ShareGroup); ok {
			// Not a group a classic member may join (Kafka's
			// classicGroupJoin).
			respond(joinError("", kerr.InconsistentGroupProtocol.Code))
			return emptyResult, nil
		}
	}
	return s.classicGroupJoinToClassicGroup(rc, req, respond)
}

func (s *Shard) classicGroupJoinToClassicGroup(rc RequestContext, req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) (voidResult, error) {
	var records []runtime.Record
	isUnknownMember := req.MemberID == ""
	records = s.maybeDeleteEmptyConsumerGroup(req.Group, records)
	_, exists := s.groups[req.Group]
	isNewGroup := !exists
	g, err := s.getOrMaybeCreateClassicGroup(req.Group, isUnknownMember)
	if err != nil {
		respond(joinError(req.MemberID, kerr.UnknownMemberID.Code))
		return emptyResult, nil
	}
	result := emptyResult
	switch {
	case !s.acceptJoiningMember(g, req.MemberID):
		g.remove(req.MemberID)
		respond(joinError("", kerr.GroupMaxSizeReached.Code))
	case isUnknownMember:
		result = s.classicGroupJoinNewMember(rc, req, g, respond)
	default:
		result = s.classicGroupJoinExistingMember(rc, req, g, respond)
	}
	if len(records) > 0 || (isNewGroup && len(result.Records) == 0) {
		// A new group (or the classic group replacing an empty consumer
		// group) is made durable with an empty GroupMetadata record.
		records = append(records, emptyGroupMetadataRecord(g))
		records = append(records, result.Records...)
		prev := result.OnWritten
		return voidResult{Records: records, NoReplay: true, OnWritten: func(err error) {
			if err != nil {
				s.log.Warn("failed to write empty metadata for group", "group", g.groupID, "err", err)
				respond(&kmsg.JoinGroupResponse{ErrorCode: appendErrorToResponseError(err), Generation: -1})
			}
			if prev != nil {
				prev(err)
			}
		}}, nil
	}
	return result, nil
}

func (s *Shard) classicGroupJoinNewMember(rc RequestContext, req *kmsg.JoinGroupRequest, g *ClassicGroup, respond func(*kmsg.JoinGroupResponse)) voidResult {
	ps := protocolsFromRequest(req.Protocols)
	switch {
	case g.is(stateDead):
		// The group was just removed (deleted, or moved elsewhere):
		// the member finds the coordinator again and retries.
		respond(joinError("", kerr.CoordinatorNotAvailable.Code))
	case !g.supportsProtocols(req.ProtocolType, ps):
		respond(joinError("", kerr.InconsistentGroupProtocol.Code))
	default:
		newMemberID := g.generateMemberID(rc.ClientID, req.InstanceID)
		if req.InstanceID != nil {
			return s.classicGroupJoinNewStaticMember(rc, req, g, newMemberID, respond)
		}
		return s.classicGroupJoinNewDynamicMember(rc, req, g, newMemberID, respond)
	}
	return emptyResult
}

func (s *Shard) classicGroupJoinNewStaticMember(rc RequestContext, req *kmsg.JoinGroupRequest, g *ClassicGroup, newMemberID string, respond func(*kmsg.JoinGroupResponse)) voidResult {
	if existing := g.staticMemberID(*req.InstanceID); existing != "" {
		s.log.Info("static member with unknown member id joins; replacing the previous member", "group", g.groupID,
			"instance_id", *req.InstanceID, "old_member_id", existing, "new_member_id", newMemberID, "state", g.state)
		return s.updateStaticMemberThenRebalanceOrCompleteJoin(rc, req, g, existing, newMemberID, respond)
	}
	return s.addMemberThenRebalanceOrCompleteJoin(rc, req, g, newMemberID, respond)
}

func (s *Shard) classicGroupJoinNewDynamicMember(rc RequestContext, req *kmsg.JoinGroupRequest, g *ClassicGroup, newMemberID string, respond func(*kmsg.JoinGroupResponse)) voidResult {
	if rc.APIVersion >= 4 {
		// KIP-394: the member must come back with the id we give it,
		// within its session timeout.
		g.addPendingMember(newMemberID)
		groupID := g.groupID
		s.timer.Schedule(classicHeartbeatKey(groupID, newMemberID), time.Duration(req.SessionTimeoutMillis)*time.Millisecond, func() (voidResult, error) {
			return s.expireClassicGroupMemberHeartbeat(groupID, newMemberID), nil
		})
		respond(joinError(newMemberID, kerr.MemberIDRequired.Code))
		return emptyResult
	}
	return s.addMemberThenRebalanceOrCompleteJoin(rc, req, g, newMemberID, respond)
}

func (s *Shard) classicGroupJoinExistingMember(rc RequestContext, req *kmsg.JoinGroupRequest, g *ClassicGroup, respond func(*kmsg.JoinGroupResponse)) voidResult {
	memberID := req.MemberID
	ps := protocolsFromRequest(req.Protocols)
	switch {
	case g.is(stateDead):
		respond(joinError(memberID, kerr.CoordinatorNotAvailable.Code))
		return emptyResult
	case !g.supportsProtocols(req.ProtocolType, ps):
		respond(joinError(memberID, kerr.InconsistentGroupProtocol.Code))
		return emptyResult
	case g.isPendingMember(memberID):
		if req.InstanceID != nil {
			// A pending member is never static (Kafka throws).
			respond(joinError(memberID, kerr.UnknownServerError.Code))
			return emptyResult
		}
		return s.addMemberThenRebalanceOrCompleteJoin(rc, req, g, memberID, respond)
	}
	if err := g.validateMember(memberID, req.InstanceID, "join-group"); err != nil {
		respond(joinError(memberID, errCode(err)))
		return emptyResult
	}
	m := g.members[memberID]
	switch g.state {
	case statePreparingRebalance:
		return s.updateMemberThenRebalanceOrCompleteJoin(req, g, m, fmt.Sprintf("member %s is joining group during %s; client reason: %s", memberID, g.state, joinReason(req)), respond)
	case stateCompletingRebalance:
		if m.matches(ps) {
			// The same metadata (the member probably missed the
			// response): the current generation again.
			respond(g.joinResponse(memberID, g.isLeader(memberID)))
			return emptyResult
		}
		return s.updateMemberThenRebalanceOrCompleteJoin(req, g, m, fmt.Sprintf("updating metadata for member %s during %s; client reason: %s", memberID, g.state, joinReason(req)), respond)
	case stateStable:
		if g.isLeader(memberID) {
			// The leader rejoining forces a rebalance (it may have
			// seen topic metadata change).
			return s.updateMemberThenRebalanceOrCompleteJoin(req, g, m, fmt.Sprintf("leader %s re-joining group during %s; client reason: %s", memberID, g.state, joinReason(req)), respond)
		}
		if !m.matches(ps) {
			return s.updateMemberThenRebalanceOrCompleteJoin(req, g, m, fmt.Sprintf("updating metadata for member %s during %s; client reason: %s", memberID, g.state, joinReason(req)), respond)
		}
		respond(g.joinResponse(memberID, false))
		return emptyResult
	}
	// Empty: the member must reset its generation and rejoin.
	s.log.Warn("attempt to add rejoining member in unexpected group state", "group", g.groupID, "member", memberID, "state", g.state)
	respond(joinError(memberID, kerr.UnknownMemberID.Code))
	return emptyResult
}

// completeClassicGroupJoinByID is the rebalance timer's operation.
func (s *Shard) completeClassicGroupJoinByID(groupID string) voidResult {
	g, err := s.getOrMaybeCreateClassicGroup(groupID, false)
	if err != nil {
		return emptyResult
	}
	return s.completeClassicGroupJoin(g)
}

// completeClassicGroupJoin ends the join phase: members that did not
// rejoin are removed, the generation moves on and the parked JoinGroups
// are answered (the leader's with the members).
func (s *Shard) completeClassicGroupJoin(g *ClassicGroup) voidResult {
	s.timer.Cancel(classicJoinKey(g.groupID))
	var removed []string
	for _, m := range g.notYetRejoinedMembers() {
		if !m.isStatic() {
			g.remove(m.memberID)
			s.timer.Cancel(classicHeartbeatKey(g.groupID, m.memberID))
			removed = append(removed, m.memberID)
		}
	}
	if len(removed) > 0 {
		s.log.Info("group removed dynamic members who have not joined", "group", g.groupID, "members", removed)
	}
	switch {
	case g.is(stateDead):
		return emptyResult
	case !g.maybeElectNewJoinedLeader() && g.numMembers() > 0:
		// Nobody rejoined: wait again until the session timeouts
		// remove the unresponsive members.
		s.log.Error("group could not complete rebalance because no members rejoined", "group", g.groupID)
		groupID := g.groupID
		s.timer.Schedule(classicJoinKey(groupID), time.Duration(g.rebalanceTimeoutMs())*time.Millisecond, func() (voidResult, error) {
			return s.completeClassicGroupJoinByID(groupID), nil
		})
		return emptyResult
	}
	g.initNextGeneration()
	if g.is(stateEmpty) {
		s.log.Info("group is now empty", "group", g.groupID, "generation", g.generationID)
		return voidResult{
			Records:  []runtime.Record{groupMetadataRecord(g, nil)},
			NoReplay: true,
			OnWritten: func(err error) {
				if err != nil {
					s.log.Warn("failed to write empty metadata for group", "group", g.groupID, "err", err)
				}
			},
		}
	}
	s.log.Info("stabilized group", "group", g.groupID, "generation", g.generationID, "members", g.numMembers(), "protocol", g.protocolName)
	for _, m := range g.orderedMembers() {
		g.completeJoin(m, g.joinResponse(m.memberID, g.isLeader(m.memberID)))
		s.rescheduleClassicHeartbeat(g, m, time.Duration(m.sessionTimeoutMs)*time.Millisecond)
		m.isNew = false
		g.addPendingSyncMember(m.memberID)
	}
	s.schedulePendingSync(g)
	return emptyResult
}

func (s *Shard) schedulePendingSync(g *ClassicGroup) {
	groupID, generation := g.groupID, g.generationID
	s.timer.Schedule(classicSyncKey(groupID), time.Duration(g.rebalanceTimeoutMs())*time.Millisecond, func() (voidResult, error) {
		return s.expirePendingSync(groupID, generation), nil
	})
}

// expireClassicGroupMemberHeartbeat is the session timeout of a member.
func (s *Shard) expireClassicGroupMemberHeartbeat(groupID, memberID string) voidResult {
	g, err := s.getOrMaybeCreateClassicGroup(groupID, false)
	if err != nil || g.is(stateDead) {
		return emptyResult
	}
	if g.isPendingMember(memberID) {
		s.log.Info("pending member removed after session timeout", "group", groupID, "member", memberID)
		g.remove(memberID)
		if g.is(statePreparingRebalance) && g.hasAllMembersJoined() {
			return s.completeClassicGroupJoin(g)
		}
		return emptyResult
	}
	m := g.members[memberID]
	if m == nil || m.hasSatisfiedHeartbeat() {
		return emptyResult
	}
	s.log.Info("member failed its session timeout; removing it from the group", "group", groupID, "member", memberID)
	s.metrics.classicMemberExpired()
	return s.removeMemberAndUpdateClassicGroup(g, m, "removing member "+memberID+" on heartbeat expiration")
}

func (s *Shard) removeMemberAndUpdateClassicGroup(g *ClassicGroup, m *classicMember, reason string) voidResult {
	// A new member may time out while parked in JoinGroup: answer it so
	// that it rejoins if it is still alive.
	g.completeJoin(m, joinError("", kerr.UnknownMemberID.Code))
	g.remove(m.memberID)
	switch {
	case g.is(stateStable) || g.is(stateCompletingRebalance):
		return s.maybePrepareRebalanceOrCompleteJoin(g, reason)
	case g.is(statePreparingRebalance) && g.hasAllMembersJoined():
		return s.completeClassicGroupJoin(g)
	}
	return emptyResult
}

func (s *Shard) updateMemberThenRebalanceOrCompleteJoin(req *kmsg.JoinGroupRequest, g *ClassicGroup, m *classicMember, reason string, respond func(*kmsg.JoinGroupResponse)) voidResult {
	g.updateMember(m, protocolsFromRequest(req.Protocols), req.RebalanceTimeoutMillis, req.SessionTimeoutMillis, respond)
	return s.maybePrepareRebalanceOrCompleteJoin(g, reason)
}

func (s *Shard) addMemberThenRebalanceOrCompleteJoin(rc RequestContext, req *kmsg.JoinGroupRequest, g *ClassicGroup, memberID string, respond func(*kmsg.JoinGroupResponse)) voidResult {
	m := &classicMember{
		memberID: memberID, instanceID: req.InstanceID, clientID: rc.ClientID, clientHost: rc.ClientHost,
		rebalanceTimeoutMs: req.RebalanceTimeoutMillis, sessionTimeoutMs: req.SessionTimeoutMillis,
		protocolType: req.ProtocolType, protocols: protocolsFromRequest(req.Protocols), isNew: true,
	}
	// A member joining during the initial delay extends it.
	if g.is(statePreparingRebalance) && g.previousState == stateEmpty {
		g.newMemberAdded = true
	}
	g.add(m, respond)
	// A new member cannot heartbeat and its parked request hides a
	// disconnect, so its join times out (classic.group.new.member.join.timeout).
	s.rescheduleClassicHeartbeat(g, m, s.cfg.ClassicNewMemberJoinTimeout)
	instance := "null"
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	return s.maybePrepareRebalanceOrCompleteJoin(g, fmt.Sprintf("adding new member %s with group instance id %s; client reason: %s", memberID, instance, joinReason(req)))
}

func (s *Shard) maybePrepareRebalanceOrCompleteJoin(g *ClassicGroup, reason string) voidResult {
	if g.canRebalance() {
		return s.prepareRebalance(g, reason)
	}
	return s.maybeCompleteJoinPhase(g)
}

// maybeCompleteJoinPhase completes a (non-initial) rebalance once every
// member rejoined.
func (s *Shard) maybeCompleteJoinPhase(g *ClassicGroup) voidResult {
	if !g.is(statePreparingRebalance) || g.previousState == stateEmpty || !g.hasAllMembersJoined() {
		return emptyResult
	}
	return s.completeClassicGroupJoin(g)
}

// prepareRebalance starts a rebalance: parked SyncGroups get
// REBALANCE_IN_PROGRESS, and the join phase ends once every member
// rejoined or the rebalance timeout passes (after the initial delay for a
// new group).
func (s *Shard) prepareRebalance(g *ClassicGroup, reason string) voidResult {
	if g.is(stateCompletingRebalance) {
		s.resetAndPropagateAssignmentWithError(g, kerr.RebalanceInProgress.Code)
	}
	s.removeSyncExpiration(g)
	initial := g.is(stateEmpty)
	if initial {
		delay := s.cfg.ClassicInitialRebalanceDelay
		remaining := max(time.Duration(g.rebalanceTimeoutMs())*time.Millisecond-delay, 0)
		s.scheduleInitialRebalance(g.groupID, delay, remaining)
	}
	g.transitionTo(statePreparingRebalance)
	s.metrics.classicRebalance()
	s.log.Info("preparing to rebalance group", "group", g.groupID, "old_generation", g.generationID, "reason", reason)
	if initial {
		return emptyResult
	}
	return s.maybeCompleteJoinElseSchedule(g)
}

func (s *Shard) scheduleInitialRebalance(groupID string, delay, remaining time.Duration) {
	s.timer.Schedule(classicJoinKey(groupID), delay, func() (voidResult, error) {
		return s.tryCompleteInitialRebalanceElseSchedule(groupID, delay, remaining), nil
	})
}

func (s *Shard) maybeCompleteJoinElseSchedule(g *ClassicGroup) voidResult {
	if g.hasAllMembersJoined() {
		return s.completeClassicGroupJoin(g)
	}
	groupID := g.groupID
	s.timer.Schedule(classicJoinKey(groupID), time.Duration(g.rebalanceTimeoutMs())*time.Millisecond, func() (voidResult, error) {
		return s.completeClassicGroupJoinByID(groupID), nil
	})
	return emptyResult
}

// tryCompleteInitialRebalanceElseSchedule extends the initial delay while
// members keep joining, up to the rebalance timeout.
func (s *Shard) tryCompleteInitialRebalanceElseSchedule(groupID string, delay, remaining time.Duration) voidResult {
	g, err := s.getOrMaybeCreateClassicGroup(groupID, false)
	if err != nil {
		return emptyResult
	}
	if g.newMemberAdded && remaining != 0 {
		g.newMemberAdded = false
		newDelay := min(s.cfg.ClassicInitialRebalanceDelay, remaining)
		newRemaining := max(remaining-delay, 0)
		s.scheduleInitialRebalance(groupID, newDelay, newRemaining)
		return emptyResult
	}
	return s.completeClassicGroupJoin(g)
}

func (s *Shard) rescheduleClassicHeartbeat(g *ClassicGroup, m *classicMember, timeout time.Duration) {
	groupID, memberID := g.groupID, m.memberID
	s.timer.Schedule(classicHeartbeatKey(groupID, memberID), timeout, func() (voidResult, error) {
		return s.expireClassicGroupMemberHeartbeat(groupID, memberID), nil
	})
}

func (s *Shard) removeSyncExpiration(g *ClassicGroup) {
	g.clearPendingSyncMembers()
	s.timer.Cancel(classicSyncKey(g.groupID))
}

// expirePendingSync removes the members that did not send SyncGroup within
// the rebalance timeout and rebalances.
func (s *Shard) expirePendingSync(groupID string, generation int32) voidResult {
	g, err := s.getOrMaybeCreateClassicGroup(groupID, false)
	if err != nil || generation != g.generationID {
		return emptyResult
	}
	if (g.is(stateCompletingRebalance) || g.is(stateStable)) && !g.hasReceivedSyncFromAllMembers() {
		var pending []string
		for _, id := range g.order {
			if g.pendingSyncMembers[id] {
				pending = append(pending, id)
			}
		}
		for _, id := range pending {
			g.remove(id)
			s.timer.Cancel(classicHeartbeatKey(groupID, id))
		}
		return s.prepareRebalance(g, fmt.Sprintf("removing %v on pending sync request expiration", pending))
	}
	return emptyResult
}

// acceptJoiningMember enforces group.max.size.
func (s *Shard) acceptJoiningMember(g *ClassicGroup, memberID string) bool {
	switch g.state {
	case stateEmpty, stateDead:
		return true
	case statePreparingRebalance:
		if m := g.members[memberID]; m != nil && m.isAwaitingJoin() {
			return true
		}
		return g.numAwaitingJoin < s.cfg.ClassicMaxSize
	default:
		return g.hasMember(memberID) || g.numMembers() < s.cfg.ClassicMaxSize
	}
}

// updateStaticMemberThenRebalanceOrCompleteJoin replaces a static member
// that came back with an unknown member id: in a stable group whose
// protocol does not change it gets its assignment back without a
// rebalance (KIP-345), once the new member id is durable.
func (s *Shard) updateStaticMemberThenRebalanceOrCompleteJoin(rc RequestContext, req *kmsg.JoinGroupRequest, g *ClassicGroup, oldMemberID, newMemberID string, respond func(*kmsg.JoinGroupResponse)) voidResult {
	currentLeader := g.leaderID
	m := g.replaceStaticMember(*req.InstanceID, oldMemberID, newMemberID)
	s.timer.Cancel(classicHeartbeatKey(g.groupID, oldMemberID))
	s.rescheduleClassicHeartbeat(g, m, time.Duration(m.sessionTimeoutMs)*time.Millisecond)
	oldRebalance, oldSession, oldProtocols := m.rebalanceTimeoutMs, m.sessionTimeoutMs, m.protocols
	g.updateMember(m, protocolsFromRequest(req.Protocols), req.RebalanceTimeoutMillis, req.SessionTimeoutMillis, respond)

	switch g.state {
	case stateStable:
		if g.protocolName != g.selectProtocol() {
			return s.maybePrepareRebalanceOrCompleteJoin(g, fmt.Sprintf("group's selected protocol will change because static member %s with instance id %s joined with change of protocol; client reason: %s", newMemberID, *req.InstanceID, joinReason(req)))
		}
		instanceID := *req.InstanceID
		return voidResult{
			Records:  []runtime.Record{groupMetadataRecord(g, g.groupAssignment())},
			NoReplay: true,
			OnWritten: func(err error) {
				if err != nil {
					s.log.Warn("failed to persist the new member id of a static member; reverting", "group", g.groupID, "instance_id", instanceID, "err", err)
					g.updateMember(m, oldProtocols, oldRebalance, oldSession, nil)
					old := g.replaceStaticMember(instanceID, newMemberID, oldMemberID)
					s.rescheduleClassicHeartbeat(g, old, time.Duration(old.sessionTimeoutMs)*time.Millisecond)
					respond(&kmsg.JoinGroupResponse{
						ErrorCode: appendErrorToResponseError(err), Generation: g.generationID,
						ProtocolType: optString(g.protocolType), Protocol: optString(g.protocolName),
						LeaderID: currentLeader, Members: []kmsg.JoinGroupResponseMember{},
					})
					return
				}
				if rc.APIVersion >= 9 {
					// KIP-814: a static leader coming back skips the
					// assignment but learns the members.
					isLeader := g.isLeader(newMemberID)
					r := g.joinResponse(newMemberID, isLeader)
					r.SkipAssignment = isLeader
					g.completeJoin(m, r)
					return
				}
				r := g.joinResponse(newMemberID, false)
				r.LeaderID = currentLeader
				g.completeJoin(m, r)
			},
		}
	case stateCompletingRebalance:
		// The leader may already have assigned the old member id: a
		// new rebalance keeps assignment and ids consistent.
		return s.prepareRebalance(g, fmt.Sprintf("updating metadata for static member %s with instance id %s; client reason: %s", newMemberID, *req.InstanceID, joinReason(req)))
	}
	return s.maybeCompleteJoinPhase(g)
}
