package group

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/coordinator/runtime"
)

// Online migration between the protocols (KIP-848, Kafka 4): a classic
// group whose members use the consumer embedded protocol becomes a
// consumer group when a member joins with ConsumerGroupHeartbeat (upgrade);
// its classic members stay, speaking JoinGroup/SyncGroup/Heartbeat to the
// consumer group, with the coordinator computing their assignment. When
// the last consumer-protocol member leaves, the group becomes a classic
// group again (downgrade). group.consumer.migration.policy allows or
// refuses each direction for non-empty groups.

func (s *Shard) upgradeEnabled() bool {
	return s.cfg.ConsumerMigrationPolicy == "bidirectional" || s.cfg.ConsumerMigrationPolicy == "upgrade"
}

func (s *Shard) downgradeEnabled() bool {
	return s.cfg.ConsumerMigrationPolicy == "bidirectional" || s.cfg.ConsumerMigrationPolicy == "downgrade"
}

// validateOnlineUpgrade is Kafka's.
func (s *Shard) validateOnlineUpgrade(g *ClassicGroup) bool {
	switch {
	case !s.upgradeEnabled():
		s.log.Info("cannot upgrade classic group to a consumer group: the online upgrade is disabled", "group", g.groupID)
		return false
	case !g.usesConsumerGroupProtocol():
		s.log.Info("cannot upgrade classic group to a consumer group: it does not use the consumer embedded protocol", "group", g.groupID)
		return false
	case g.numMembers() > s.cfg.ConsumerMaxSize:
		s.log.Info("cannot upgrade classic group to a consumer group: too many members", "group", g.groupID)
		return false
	}
	return true
}

// toAssignment turns a consumer protocol assignment into topic ids.
func (s *Shard) toAssignment(topics []kmsg.ConsumerMemberAssignmentTopic) assignment {
	a := assignment{}
	for _, t := range topics {
		info, ok := s.topics.TopicByName(t.Topic)
		if !ok {
			continue
		}
		a[info.ID] = unionSorted(a[info.ID], slicesSorted(t.Partitions))
	}
	return a
}

func slicesSorted(ps []int32) []int32 {
	out := slices.Clone(ps)
	slices.Sort(out)
	return slices.Compact(out)
}

// convertToConsumerGroup is Kafka's: parked requests of the classic group
// get REBALANCE_IN_PROGRESS, its record is tombstoned, and the consumer
// group is written with every member Stable at the classic generation,
// holding its classic assignment.
func (s *Shard) convertToConsumerGroup(cg *ClassicGroup, records []runtime.Record) (*ConsumerGroup, []runtime.Record, error) {
	g := newConsumerGroup(cg.groupID)
	g.groupEpoch, g.assignmentEpoch = cg.generationID, cg.generationID
	var members []*ConsumerGroupMember
	for _, cm := range cg.orderedMembers() {
		var a kmsg.ConsumerMemberAssignment
		var sub kmsg.ConsumerMemberMetadata
		if err := a.ReadFrom(cm.assignment); err != nil && len(cm.assignment) > 0 {
			return nil, records, apierr.Errorf(kerr.GroupIDNotFound, "Cannot upgrade the classic group %s to consumer group because the embedded consumer protocol is malformed.", cg.groupID)
		}
		if err := sub.ReadFrom(cm.metadata(cg.protocolName)); err != nil {
			return nil, records, apierr.Errorf(kerr.GroupIDNotFound, "Cannot upgrade the classic group %s to consumer group because the embedded consumer protocol is malformed.", cg.groupID)
		}
		m := newConsumerGroupMember(cm.memberID)
		m.memberEpoch, m.previousMemberEpoch, m.state = cg.generationID, cg.generationID, memberStable
		m.instanceID, m.rackID, m.rebalanceTimeoutMs = cm.instanceID, sub.Rack, cm.rebalanceTimeoutMs
		m.clientID, m.clientHost = cm.clientID, cm.clientHost
		m.subscribedTopicNames = sortedUnique(sub.Topics)
		m.assigned = s.toAssignment(a.Topics)
		m.classic = &classicMemberMetadata{SessionTimeoutMs: cm.sessionTimeoutMs}
		for _, p := range cm.protocols {
			m.classic.SupportedProtocols = append(m.classic.SupportedProtocols, classicProtocol{Name: p.name, Metadata: p.metadata})
		}
		g.updateTargetAssignment(m.memberID, m.assigned)
		g.updateMember(m)
		members = append(members, m)
	}
	for _, m := range cg.orderedMembers() {
		cg.completeJoin(m, joinError(m.memberID, kerr.RebalanceInProgress.Code))
		cg.completeSync(m, syncError(kerr.RebalanceInProgress.Code))
	}
	records = append(records, cg.tombstones()...)
	for _, m := range members {
		records = append(records, consumerGroupMemberSubscriptionRecord(g.groupID, m.memberID, m.subscriptionValue()))
	}
	records = append(records, consumerGroupEpochRecord(g.groupID, g.groupEpoch))
	for _, m := range members {
		records = append(records, consumerGroupTargetAssignmentRecord(g.groupID, m.memberID, m.assigned.toRecord()))
	}
	records = append(records, consumerGroupTargetAssignmentEpochRecord(g.groupID, g.groupEpoch))
	for _, m := range members {
		records = append(records, consumerGroupCurrentAssignmentRecord(g.groupID, m.memberID, m.assignmentValue()))
		s.scheduleConsumerSessionTimeout(g.groupID, m.memberID, durationMs(m.classicSessionTimeoutMs()))
	}
	s.log.Info("upgrading classic group to a consumer group", "group", g.groupID, "members", len(members))
	return g, records, nil
}

// validateOnlineDowngradeWithFencedMembers: once these members are gone,
// only classic members remain, and the policy and group.max.size allow a
// classic group.
func (s *Shard) validateOnlineDowngradeWithFencedMembers(g *ConsumerGroup, fenced []*ConsumerGroupMember) bool {
	for _, m := range fenced {
		if m.useClassicProtocol() {
			return false
		}
	}
	switch {
	case g.numClassicMembers != g.numMembers()-len(fenced):
		return false
	case g.numMembers() <= len(fenced):
		return false // it empties: it stays a consumer group
	case !s.downgradeEnabled():
		s.log.Info("cannot downgrade consumer group to a classic group: the online downgrade is disabled", "group", g.groupID)
		return false
	case g.numMembers()-len(fenced) > s.cfg.ClassicMaxSize:
		s.log.Info("cannot downgrade consumer group to a classic group: too many members", "group", g.groupID)
		return false
	}
	return true
}

// convertToClassicGroup is Kafka's: the consumer group's records are
// tombstoned, the classic group (Stable at the group epoch, each member
// holding its target assignment in the consumer protocol's format) is
// written and installed directly, and, if members left, rebalanced.
func (s *Shard) convertToClassicGroup(g *ConsumerGroup, leaving []*ConsumerGroupMember, joining *ConsumerGroupMember) []runtime.Record {
	var records []runtime.Record
	leavingIDs := map[string]bool{}
	for _, m := range leaving {
		leavingIDs[m.memberID] = true
	}
	if joining == nil {
		records = g.tombstones()
	} else {
		records = g.tombstonesReplacing(leaving[0].memberID, joining.memberID)
	}
	cg := newClassicGroup(g.groupID, s.now)
	cg.state, cg.generationID, cg.protocolType = stateStable, g.groupEpoch, consumerProtocolType
	cg.currentStateTimestamp = s.now().UnixMilli()
	targetOf := map[string]assignment{}
	for _, id := range g.sortedMemberIDs() {
		if leavingIDs[id] {
			continue
		}
		m := g.members[id]
		cg.add(&classicMember{memberID: id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeoutMs: m.rebalanceTimeoutMs, sessionTimeoutMs: m.classicSessionTimeoutMs(), protocolType: consumerProtocolType,
			protocols: m.classicProtocols()}, nil)
		targetOf[id] = g.targetAssignmentOf(id)
	}
	if joining != nil {
		cg.add(&classicMember{memberID: joining.memberID, instanceID: joining.instanceID, clientID: joining.clientID, clientHost: joining.clientHost,
			rebalanceTimeoutMs: joining.rebalanceTimeoutMs, sessionTimeoutMs: joining.classicSessionTimeoutMs(), protocolType: consumerProtocolType,
			protocols: joining.classicProtocols()}, nil)
		targetOf[joining.memberID] = g.targetAssignmentOf(leaving[0].memberID)
	}
	cg.protocolName = cg.selectProtocol()
	cg.subscribedTopics = cg.computeSubscribedTopics()
	for _, cm := range cg.orderedMembers() {
		cm.assignment = s.classicAssignment(targetOf[cm.memberID], cm.metadata(cg.protocolName))
	}
	records = append(records, groupMetadataRecord(cg, cg.groupAssignment()))
	s.removeGroup(g.groupID)
	s.groups[g.groupID] = cg
	for _, cm := range cg.orderedMembers() {
		s.cancelConsumerTimers(g.groupID, cm.memberID)
		s.rescheduleClassicHeartbeat(cg, cm, durationMs(cm.sessionTimeoutMs))
	}
	s.log.Info("downgrading consumer group to a classic group", "group", g.groupID, "members", cg.numMembers())
	if joining == nil {
		s.prepareRebalance(cg, fmt.Sprintf("downgrade group %s from consumer to classic", g.groupID))
	}
	return records
}

// classicAssignment encodes a target assignment in the consumer
// protocol's format, at the version of the member's subscription.
func (s *Shard) classicAssignment(a assignment, subscription []byte) []byte {
	var sub kmsg.ConsumerMemberMetadata
	_ = sub.ReadFrom(subscription)
	out := kmsg.NewConsumerMemberAssignment()
	out.Version = sub.Version
	for _, t := range a.sortedTopics() {
		name := ""
		if info, ok := s.topics.TopicByID(t); ok {
			name = info.Name
		} else {
			continue
		}
		out.Topics = append(out.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: name, Partitions: slices.Clone(a[t])})
	}
	return out.AppendTo(nil)
}

// classicGroupJoinToConsumerGroup is a classic member's JoinGroup in a
// consumer group: its subscription comes from its embedded protocol
// metadata, and it gets its epoch as the generation; its assignment comes
// with SyncGroup.
func (s *Shard) classicGroupJoinToConsumerGroup(g *ConsumerGroup, rc RequestContext, req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) (voidResult, error) {
	now := s.now().UnixMilli()
	var records []runtime.Record
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = uuid.Random().String()
	}
	if err := s.throwIfConsumerGroupIsFull(g, memberID); err != nil {
		return emptyResult, err
	}
	names := map[string]bool{}
	for _, p := range req.Protocols {
		names[p.Name] = true
	}
	if !g.supportsClassicProtocols(req.ProtocolType, names) {
		return emptyResult, apierr.Errorf(kerr.InconsistentGroupProtocol, "Member %s's protocols are not supported.", memberID)
	}
	if rc.APIVersion >= 4 && req.InstanceID == nil && unknown {
		respond(joinError(memberID, kerr.MemberIDRequired.Code))
		return emptyResult, nil
	}
	var m *ConsumerGroupMember
	var err error
	if req.InstanceID == nil {
		m, err = s.getOrMaybeSubscribeDynamicMember(g, memberID, -1, []topicPartitions{}, true, true)
	} else {
		m, records, err = s.getOrMaybeSubscribeStaticMember(g, memberID, -1, req.InstanceID, []topicPartitions{}, unknown, true, records)
	}
	if err != nil {
		return emptyResult, err
	}
	var sub kmsg.ConsumerMemberMetadata
	if len(req.Protocols) == 0 || sub.ReadFrom(req.Protocols[0].Metadata) != nil {
		return emptyResult, apierr.Errorf(kerr.InconsistentGroupProtocol, "Malformed embedded consumer protocol in the JoinGroup of member %s.", memberID)
	}
	updated := classicMemberFromJoin(m, rc, req, &sub)
	bump, records := s.memberSubscriptionChanged(g.groupID, m, updated, records)
	epoch, md := g.groupEpoch, g.subscriptionMetadata
	if bump || g.hasMetadataExpired(now) {
		epoch, md, records = s.updateSubscriptionMetadata(g, bump, m, updated, records, now)
	}
	targetEpoch, target := g.assignmentEpoch, g.targetAssignmentFor(updated.memberID, updated.instanceID)
	if epoch > g.assignmentEpoch {
		target, records, err = s.updateTargetAssignment(g, epoch, m, updated, md, records)
		if err != nil {
			return emptyResult, err
		}
		targetEpoch = epoch
	}
	var owned []topicPartitions
	for _, op := range sub.OwnedPartitions {
		if info, ok := s.topics.TopicByName(op.Topic); ok {
			owned = append(owned, topicPartitions{TopicID: info.ID, Partitions: op.Partitions})
		}
	}
	if owned == nil {
		owned = []topicPartitions{}
	}
	updated, records, err = s.maybeReconcile(g, updated, targetEpoch, target, owned, records)
	if err != nil {
		return emptyResult, err
	}
	// The last consumer-protocol static member replaced by a classic one:
	// the group goes back to the classic protocol.
	prev := g.staticMemberID(req.InstanceID)
	downgrade := prev != "" && prev != updated.memberID && s.validateOnlineDowngradeWithReplacedMember(g, prev)
	if downgrade {
		records = append(records, s.convertToClassicGroup(g, []*ConsumerGroupMember{g.members[prev]}, updated)...)
	}
	resp := &kmsg.JoinGroupResponse{MemberID: updated.memberID, Generation: updated.memberEpoch,
		ProtocolType: optString(consumerProtocolType), Protocol: optString(updated.classic.SupportedProtocols[0].Name),
		Members: []kmsg.JoinGroupResponseMember{}}
	groupID, sessionTimeout, rebalanceTimeout := g.groupID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis
	return voidResult{Records: records, NoReplay: downgrade, OnWritten: func(err error) {
		if err != nil {
			return // the service answers with the error
		}
		s.timer.Cancel(consumerJoinKey(groupID, resp.MemberID))
		if !downgrade {
			s.scheduleConsumerSessionTimeout(groupID, resp.MemberID, durationMs(sessionTimeout))
			s.scheduleConsumerSyncTimeout(groupID, resp.MemberID, rebalanceTimeout)
		}
		respond(resp)
	}}, nil
}

// classicMemberFromJoin is the member m as a classic JoinGroup describes
// it: subscription and rack from the embedded protocol, timeouts and
// protocols from the request.
func classicMemberFromJoin(m *ConsumerGroupMember, rc RequestContext, req *kmsg.JoinGroupRequest, sub *kmsg.ConsumerMemberMetadata) *ConsumerGroupMember {
	updated := m.copy()
	if req.InstanceID != nil {
		updated.instanceID = req.InstanceID
	}
	if sub.Rack != nil {
		updated.rackID = sub.Rack
	}
	if req.RebalanceTimeoutMillis != -1 {
		updated.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	updated.subscribedTopicNames = sortedUnique(sub.Topics)
	if updated.subscribedTopicNames == nil {
		updated.subscribedTopicNames = []string{}
	}
	updated.clientID, updated.clientHost = rc.ClientID, rc.ClientHost
	updated.classic = &classicMemberMetadata{SessionTimeoutMs: req.SessionTimeoutMillis}
	for _, p := range req.Protocols {
		updated.classic.SupportedProtocols = append(updated.classic.SupportedProtocols, classicProtocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)})
	}
	return updated
}

func (s *Shard) validateOnlineDowngradeWithReplacedMember(g *ConsumerGroup, replaced string) bool {
	switch {
	case !g.allMembersUseClassicProtocolExcept(replaced):
		return false
	case !s.downgradeEnabled():
		return false
	case g.numMembers() > s.cfg.ClassicMaxSize:
		return false
	}
	return true
}

func (s *Shard) scheduleConsumerSyncTimeout(groupID, memberID string, rebalanceTimeoutMs int32) {
	s.timer.Schedule(consumerSyncKey(groupID, memberID), durationMs(rebalanceTimeoutMs), func() (voidResult, error) {
		return s.fenceMemberOperation(groupID, memberID, "the member failed to sync within timeout", -1), nil
	})
}

func (s *Shard) scheduleConsumerJoinTimeoutIfAbsent(groupID, memberID string, rebalanceTimeoutMs int32) {
	s.timer.ScheduleIfAbsent(consumerJoinKey(groupID, memberID), durationMs(rebalanceTimeoutMs), func() (voidResult, error) {
		return s.fenceMemberOperation(groupID, memberID, "the classic member failed to join within the rebalance timeout", -1), nil
	})
}

// classicMemberOf is validateConsumerGroupMember plus the classic
// protocol check.
func (g *ConsumerGroup) classicMemberOf(memberID string, instanceID *string) (*ConsumerGroupMember, error) {
	var m *ConsumerGroupMember
	if instanceID == nil {
		var err error
		if m, err = g.member(memberID); err != nil {
			return nil, err
		}
	} else {
		if m = g.staticMember(instanceID); m == nil {
			return nil, apierr.Errorf(kerr.UnknownMemberID, "Member with instance id %s is not a member of group %s.", *instanceID, g.groupID)
		}
		if m.memberID != memberID {
			return nil, apierr.Errorf(kerr.FencedInstanceID, "Static member %s with instance id %s is fenced by existing member %s.", memberID, *instanceID, m.memberID)
		}
	}
	if !m.useClassicProtocol() {
		return nil, apierr.Errorf(kerr.UnknownMemberID, "Member %s does not use the classic protocol.", m.memberID)
	}
	return m, nil
}

// classicGroupSyncToConsumerGroup answers a classic member's SyncGroup
// with its current assignment once everything before it is durable.
func (s *Shard) classicGroupSyncToConsumerGroup(g *ConsumerGroup, req *kmsg.SyncGroupRequest, respond func(*kmsg.SyncGroupResponse)) (voidResult, error) {
	m, err := g.classicMemberOf(req.MemberID, req.InstanceID)
	if err != nil {
		return emptyResult, err
	}
	if req.Generation != m.memberEpoch {
		return emptyResult, apierr.Errorf(kerr.IllegalGeneration, "The member %s has an unmatched generation id %d; expected %d.", m.memberID, req.Generation, m.memberEpoch)
	}
	protocolName := m.classic.SupportedProtocols[0].Name
	if req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType {
		return emptyResult, apierr.Errorf(kerr.InconsistentGroupProtocol, "The protocol type %s from member %s request is not equal to the group protocol type %s.", *req.ProtocolType, m.memberID, consumerProtocolType)
	}
	if req.Protocol != nil && *req.Protocol != protocolName {
		return emptyResult, apierr.Errorf(kerr.InconsistentGroupProtocol, "The protocol name %s from member %s request is not equal to the protocol name %s returned in the join response.", *req.Protocol, m.memberID, protocolName)
	}
	if err := s.throwIfRebalanceInProgress(g, m); err != nil {
		return emptyResult, err
	}
	groupID, memberID := g.groupID, m.memberID
	sessionTimeout := m.classicSessionTimeoutMs()
	assigned := s.classicAssignment(m.assigned, m.classic.SupportedProtocols[0].Metadata)
	return voidResult{OnWritten: func(err error) {
		if err != nil {
			return
		}
		s.timer.Cancel(consumerSyncKey(groupID, memberID))
		s.scheduleConsumerSessionTimeout(groupID, memberID, durationMs(sessionTimeout))
		respond(&kmsg.SyncGroupResponse{ProtocolType: req.ProtocolType, Protocol: req.Protocol, MemberAssignment: assigned})
	}}, nil
}

func (s *Shard) throwIfRebalanceInProgress(g *ConsumerGroup, m *ConsumerGroupMember) error {
	if g.groupEpoch > m.memberEpoch && m.state != memberUnrevokedPartitions {
		s.scheduleConsumerJoinTimeoutIfAbsent(g.groupID, m.memberID, m.rebalanceTimeoutMs)
		return apierr.Errorf(kerr.RebalanceInProgress, "A new rebalance is triggered in group %s and member %s should rejoin to catch up.", g.groupID, m.memberID)
	}
	return nil
}

// classicGroupHeartbeatToConsumerGroup tells a classic member to rejoin
// when its assignment must change.
func (s *Shard) classicGroupHeartbeatToConsumerGroup(g *ConsumerGroup, req *kmsg.HeartbeatRequest) (runtime.Result[*kmsg.HeartbeatResponse], error) {
	var res runtime.Result[*kmsg.HeartbeatResponse]
	m, err := g.classicMemberOf(req.MemberID, req.InstanceID)
	if err != nil {
		return res, err
	}
	if req.Generation != m.memberEpoch {
		return res, apierr.Errorf(kerr.IllegalGeneration, "The member %s has an unmatched generation id %d; expected %d.", m.memberID, req.Generation, m.memberEpoch)
	}
	s.scheduleConsumerSessionTimeout(g.groupID, m.memberID, durationMs(m.classicSessionTimeoutMs()))
	resp := &kmsg.HeartbeatResponse{}
	if m.memberEpoch < g.groupEpoch || m.state == memberUnrevokedPartitions ||
		(m.state == memberUnreleasedPartitions && !g.waitingOnUnreleasedPartition(m)) {
		resp.ErrorCode = kerr.RebalanceInProgress.Code
		s.scheduleConsumerJoinTimeoutIfAbsent(g.groupID, m.memberID, m.rebalanceTimeoutMs)
	}
	res.Response = resp
	return res, nil
}

// classicGroupLeaveToConsumerGroup removes classic members (by member id
// or instance id) from a consumer group; if only classic members remain
// and the policy allows, the group goes back to the classic protocol.
func (s *Shard) classicGroupLeaveToConsumerGroup(g *ConsumerGroup, req *kmsg.LeaveGroupRequest) (runtime.Result[*kmsg.LeaveGroupResponse], error) {
	var res runtime.Result[*kmsg.LeaveGroupResponse]
	resp := &kmsg.LeaveGroupResponse{}
	var left []*ConsumerGroupMember
	var records []runtime.Record
	for _, lm := range req.Members {
		r := kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		m, err := s.leavingClassicMember(g, lm)
		if err != nil {
			r.ErrorCode = errCode(err)
		} else {
			r.MemberID = m.memberID
			records = removeMemberRecords(records, g.groupID, m.memberID)
			s.cancelConsumerTimers(g.groupID, m.memberID)
			left = append(left, m)
		}
		resp.Members = append(resp.Members, r)
	}
	if len(left) > 0 {
		// Classic members subscribe by name only.
		names := make(map[string]int, len(g.subscribedTopicNames))
		for t, n := range g.subscribedTopicNames {
			names[t] = n
		}
		for _, m := range left {
			for _, t := range m.subscribedTopicNames {
				inc(names, t, -1)
			}
		}
		md := computeSubscriptionMetadata(names, s.topics)
		if !equalSubscriptionMetadata(md, g.subscriptionMetadata) {
			records = append(records, subscriptionMetadataRecord(g.groupID, md))
		}
		records = append(records, consumerGroupEpochRecord(g.groupID, g.groupEpoch+1))
		s.metrics.consumerRebalance()
	}
	res.Records, res.Response = records, resp
	return res, nil
}

func (s *Shard) leavingClassicMember(g *ConsumerGroup, lm kmsg.LeaveGroupRequestMember) (*ConsumerGroupMember, error) {
	var m *ConsumerGroupMember
	if lm.InstanceID == nil {
		var err error
		if m, err = g.member(lm.MemberID); err != nil {
			return nil, err
		}
	} else {
		if m = g.staticMember(lm.InstanceID); m == nil {
			return nil, apierr.Errorf(kerr.UnknownMemberID, "Instance id %s is unknown.", *lm.InstanceID)
		}
		// An admin may remove a static member by instance id alone.
		if lm.MemberID != "" && m.memberID != lm.MemberID {
			return nil, apierr.Errorf(kerr.FencedInstanceID, "Static member %s with instance id %s is fenced by existing member %s.", lm.MemberID, *lm.InstanceID, m.memberID)
		}
	}
	if !m.useClassicProtocol() {
		return nil, apierr.Errorf(kerr.UnknownMemberID, "Member %s does not use the classic protocol.", m.memberID)
	}
	return m, nil
}

// maybeDeleteEmptyConsumerGroup replaces an empty consumer group before a
// classic member creates the group anew (tombstones written, the group
// forgotten at once).
func (s *Shard) maybeDeleteEmptyConsumerGroup(id string, records []runtime.Record) []runtime.Record {
	if g, ok := s.groups[id].(*ConsumerGroup); ok && g.isEmpty() {
		records = append(records, g.tombstones()...)
		s.removeGroup(id)
	}
	return records
}

// describeConsumerGroupAsClassic is DescribeGroups on a consumer group:
// Kafka 4 answers that it is not a classic group.
func (s *Shard) describeConsumerGroupAsClassic(g *ConsumerGroup, apiVersion int16) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group, d.State = g.groupID, stateDead.String()
	if apiVersion >= 6 {
		d.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + g.groupID + " is not a classic group."
		d.ErrorMessage = &msg
	}
	return d
}
