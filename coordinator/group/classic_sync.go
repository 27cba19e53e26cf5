package group

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// The classic protocol's SyncGroup, Heartbeat and LeaveGroup (Kafka's
// GroupMetadataManager).

// classicGroupSync handles a SyncGroup; respond is called exactly once:
// for the leader once the assignment is durable, for followers once the
// leader's assignment arrived.
func (s *Shard) classicGroupSync(rc RequestContext, req *kmsg.SyncGroupRequest, respond func(*kmsg.SyncGroupResponse)) (voidResult, error) {
	g, ok := s.groups[req.Group]
	if !ok || g.isEmpty() {
		respond(syncError(kerr.UnknownMemberID.Code))
		return emptyResult, nil
	}
	switch g := g.(type) {
	case *ClassicGroup:
		return s.classicGroupSyncToClassicGroup(g, req, respond), nil
	case *ConsumerGroup:
		return s.classicGroupSyncToConsumerGroup(g, req, respond)
	}
	respond(syncError(kerr.UnknownMemberID.Code))
	return emptyResult, nil
}

func (s *Shard) classicGroupSyncToClassicGroup(g *ClassicGroup, req *kmsg.SyncGroupRequest, respond func(*kmsg.SyncGroupResponse)) voidResult {
	if code := s.validateSyncGroup(g, req); code != 0 {
		respond(syncError(code))
		return emptyResult
	}
	memberID := req.MemberID
	switch g.state {
	case statePreparingRebalance:
		respond(syncError(kerr.RebalanceInProgress.Code))
	case stateCompletingRebalance:
		g.members[memberID].awaitingSync = respond
		s.removePendingSyncMember(g, memberID)
		if !g.isLeader(memberID) {
			return emptyResult
		}
		s.log.Info("assignment received from leader", "group", g.groupID, "leader", memberID, "generation", g.generationID, "members", g.numMembers())
		assignment := make(map[string][]byte, g.numMembers())
		for _, a := range req.GroupAssignment {
			assignment[a.MemberID] = nonNil(bytes.Clone(a.MemberAssignment)) // the request's buffer is reused
		}
		var missing []string
		for _, id := range g.order {
			if _, ok := assignment[id]; !ok {
				assignment[id] = []byte{}
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			s.log.Warn("setting empty assignments for members", "group", g.groupID, "members", missing, "generation", g.generationID)
		}
		generation := req.Generation
		return voidResult{
			Records:  []runtime.Record{groupMetadataRecord(g, assignment)},
			NoReplay: true,
			OnWritten: func(err error) {
				// A member may have joined meanwhile: only act on the
				// same generation still completing.
				if !g.is(stateCompletingRebalance) || generation != g.generationID {
					return
				}
				if err != nil {
					code := appendErrorToResponseError(err)
					s.resetAndPropagateAssignmentWithError(g, code)
					s.maybePrepareRebalanceOrCompleteJoin(g, fmt.Sprintf("error %v when storing group assignment during SyncGroup (member: %s)", kerr.ErrorForCode(code), memberID))
					return
				}
				s.setAndPropagateAssignment(g, assignment)
				g.transitionTo(stateStable)
				s.metrics.classicRebalanceCompleted()
			},
		}
	case stateStable:
		s.removePendingSyncMember(g, memberID)
		m := g.members[memberID]
		respond(&kmsg.SyncGroupResponse{ProtocolType: optString(g.protocolType), Protocol: optString(g.protocolName), MemberAssignment: nonNil(m.assignment)})
	}
	return emptyResult
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (s *Shard) validateSyncGroup(g *ClassicGroup, req *kmsg.SyncGroupRequest) int16 {
	if g.is(stateDead) {
		return kerr.CoordinatorNotAvailable.Code
	}
	if err := g.validateMember(req.MemberID, req.InstanceID, "sync-group"); err != nil {
		return errCode(err)
	}
	if req.Generation != g.generationID {
		return kerr.IllegalGeneration.Code
	}
	if isProtocolInconsistent(req.ProtocolType, g.protocolType) || isProtocolInconsistent(req.Protocol, g.protocolName) {
		return kerr.InconsistentGroupProtocol.Code
	}
	return 0
}

func isProtocolInconsistent(fromRequest *string, ofGroup string) bool {
	return fromRequest != nil && ofGroup != "" && *fromRequest != ofGroup
}

func (s *Shard) removePendingSyncMember(g *ClassicGroup, memberID string) {
	g.removePendingSyncMember(memberID)
	switch g.state {
	case stateDead, stateEmpty, statePreparingRebalance:
		s.timer.Cancel(classicSyncKey(g.groupID))
	default:
		if g.hasReceivedSyncFromAllMembers() {
			s.timer.Cancel(classicSyncKey(g.groupID))
		}
	}
}

func (s *Shard) resetAndPropagateAssignmentWithError(g *ClassicGroup, code int16) {
	for _, m := range g.members {
		m.assignment = []byte{}
	}
	s.propagateAssignment(g, code)
}

func (s *Shard) setAndPropagateAssignment(g *ClassicGroup, assignment map[string][]byte) {
	for id, m := range g.members {
		m.assignment = nonNil(assignment[id])
	}
	s.propagateAssignment(g, 0)
}

// propagateAssignment answers the parked SyncGroups and restarts the
// members' session timeouts.
func (s *Shard) propagateAssignment(g *ClassicGroup, code int16) {
	var protocolType, protocolName *string
	if code == 0 {
		protocolType, protocolName = optString(g.protocolType), optString(g.protocolName)
	}
	for _, m := range g.orderedMembers() {
		resp := &kmsg.SyncGroupResponse{ErrorCode: code, ProtocolType: protocolType, Protocol: protocolName, MemberAssignment: nonNil(m.assignment)}
		if g.completeSync(m, resp) {
			s.rescheduleClassicHeartbeat(g, m, time.Duration(m.sessionTimeoutMs)*time.Millisecond)
		}
	}
}

// classicGroupHeartbeat handles a Heartbeat.
func (s *Shard) classicGroupHeartbeat(req *kmsg.HeartbeatRequest) (runtime.Result[*kmsg.HeartbeatResponse], error) {
	var res runtime.Result[*kmsg.HeartbeatResponse]
	switch g := s.groups[req.Group].(type) {
	case *ClassicGroup:
		resp, err := s.classicGroupHeartbeatToClassicGroup(g, req)
		res.Response = resp
		return res, err
	case *ConsumerGroup:
		return s.classicGroupHeartbeatToConsumerGroup(g, req)
	}
	return res, apierr.Errorf(kerr.UnknownMemberID, "Group %s not found.", req.Group)
}

func (s *Shard) classicGroupHeartbeatToClassicGroup(g *ClassicGroup, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	if g.is(stateDead) {
		return nil, kerr.CoordinatorNotAvailable
	}
	if err := g.validateMember(req.MemberID, req.InstanceID, "heartbeat"); err != nil {
		return nil, err
	}
	if req.Generation != g.generationID {
		return nil, kerr.IllegalGeneration
	}
	switch g.state {
	case stateEmpty:
		return &kmsg.HeartbeatResponse{ErrorCode: kerr.UnknownMemberID.Code}, nil
	case statePreparingRebalance:
		s.rescheduleClassicHeartbeat(g, g.members[req.MemberID], time.Duration(g.members[req.MemberID].sessionTimeoutMs)*time.Millisecond)
		return &kmsg.HeartbeatResponse{ErrorCode: kerr.RebalanceInProgress.Code}, nil
	}
	// Heartbeats may start after JoinGroup, while CompletingRebalance.
	m := g.members[req.MemberID]
	s.rescheduleClassicHeartbeat(g, m, time.Duration(m.sessionTimeoutMs)*time.Millisecond)
	return &kmsg.HeartbeatResponse{}, nil
}

// classicGroupLeave handles a LeaveGroup (v3+: several members, by member
// id or by instance id).
func (s *Shard) classicGroupLeave(req *kmsg.LeaveGroupRequest) (runtime.Result[*kmsg.LeaveGroupResponse], error) {
	var res runtime.Result[*kmsg.LeaveGroupResponse]
	switch g := s.groups[req.Group].(type) {
	case *ClassicGroup:
		return s.classicGroupLeaveToClassicGroup(g, req), nil
	case *ConsumerGroup:
		return s.classicGroupLeaveToConsumerGroup(g, req)
	}
	return res, apierr.Errorf(kerr.UnknownMemberID, "Group %s not found.", req.Group)
}

func (s *Shard) classicGroupLeaveToClassicGroup(g *ClassicGroup, req *kmsg.LeaveGroupRequest) runtime.Result[*kmsg.LeaveGroupResponse] {
	if g.is(stateDead) {
		return runtime.Result[*kmsg.LeaveGroupResponse]{Response: &kmsg.LeaveGroupResponse{ErrorCode: kerr.CoordinatorNotAvailable.Code}}
	}
	resp := &kmsg.LeaveGroupResponse{}
	var left []string
	for _, lm := range req.Members {
		reason := "not provided"
		if lm.Reason != nil {
			reason = *lm.Reason
		}
		r := kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		switch {
		case lm.MemberID == "":
			// Removal by instance id (an admin removing a static
			// member).
			if lm.InstanceID != nil && g.hasStaticMember(*lm.InstanceID) {
				s.removeCurrentMemberFromClassicGroup(g, g.staticMemberID(*lm.InstanceID), reason)
			} else {
				r.ErrorCode = kerr.UnknownMemberID.Code
			}
		case g.isPendingMember(lm.MemberID):
			g.remove(lm.MemberID)
			s.timer.Cancel(classicHeartbeatKey(g.groupID, lm.MemberID))
			s.log.Info("pending member left the group", "group", g.groupID, "member", lm.MemberID, "reason", reason)
		default:
			if err := g.validateMember(lm.MemberID, lm.InstanceID, "leave-group"); err != nil {
				r.ErrorCode = errCode(err)
			} else {
				s.removeCurrentMemberFromClassicGroup(g, lm.MemberID, reason)
			}
		}
		if r.ErrorCode == 0 {
			left = append(left, lm.MemberID)
		}
		resp.Members = append(resp.Members, r)
	}
	result := emptyResult
	if len(left) > 0 {
		reason := "explicit `LeaveGroup` request for (" + strings.Join(left, ", ") + ") members."
		switch g.state {
		case stateStable, stateCompletingRebalance:
			result = s.maybePrepareRebalanceOrCompleteJoin(g, reason)
		case statePreparingRebalance:
			result = s.maybeCompleteJoinPhase(g)
		}
	}
	return runtime.Result[*kmsg.LeaveGroupResponse]{Records: result.Records, Response: resp, NoReplay: result.NoReplay, OnWritten: result.OnWritten}
}

func (s *Shard) removeCurrentMemberFromClassicGroup(g *ClassicGroup, memberID, reason string) {
	m := g.members[memberID]
	s.timer.Cancel(classicHeartbeatKey(g.groupID, memberID))
	s.log.Info("member left the group", "group", g.groupID, "member", memberID, "reason", reason)
	g.completeJoin(m, joinError("", kerr.UnknownMemberID.Code))
	g.remove(memberID)
}
