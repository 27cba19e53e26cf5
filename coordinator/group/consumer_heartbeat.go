package group

import (
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/coordinator/runtime"
)

// The consumer protocol's ConsumerGroupHeartbeat (KIP-848; Kafka 4's
// GroupMetadataManager.consumerGroupHeartbeat): a member joins, reports
// what it owns, and learns its epoch and assignment. Every decision is a
// record: the member's subscription, the group epoch, the subscription
// metadata, the target assignment, the member's current assignment.

type heartbeatResult = runtime.Result[*kmsg.ConsumerGroupHeartbeatResponse]

// Timer keys of consumer-protocol members (Kafka's).
func consumerSessionTimeoutKey(groupID, memberID string) string {
	return "session-timeout-" + groupID + "-" + memberID
}
func consumerRebalanceTimeoutKey(groupID, memberID string) string {
	return "rebalance-timeout-" + groupID + "-" + memberID
}
func consumerJoinKey(groupID, memberID string) string { return "join-" + groupID + "-" + memberID }
func consumerSyncKey(groupID, memberID string) string { return "sync-" + groupID + "-" + memberID }
func regexRefreshKey(groupID string) string           { return groupID + "-regex" }

// metadataRefreshInterval is Kafka's default for the (internal) consumer
// group metadata refresh interval: never, unless topics change.
const metadataRefreshInterval = math.MaxInt32 * time.Millisecond

// compileRegex compiles a subscription the way Kafka matches it: the
// whole topic name (RE2/J's matches(); Go's regexp is RE2 too).
func compileRegex(re string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + re + ")$")
}

func invalidRequest(format string, args ...any) error {
	return apierr.Errorf(kerr.InvalidRequest, format, args...)
}

// validateConsumerGroupHeartbeat is throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (s *Shard) validateConsumerGroupHeartbeat(rc RequestContext, req *kmsg.ConsumerGroupHeartbeatRequest) error {
	switch {
	case rc.APIVersion >= 1 && req.MemberID == "":
		return invalidRequest("MemberId can't be empty.") // KIP-1082: the member makes its id
	case req.Group == "":
		return invalidRequest("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalidRequest("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalidRequest("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch > 0 || req.MemberEpoch == leaveGroupMemberEpoch:
		if req.MemberID == "" {
			return invalidRequest("MemberId can't be empty.")
		}
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return invalidRequest("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalidRequest("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalidRequest("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case req.MemberEpoch == leaveGroupStaticMemberEpoch:
		if req.MemberID == "" {
			return invalidRequest("MemberId can't be empty.")
		}
		if req.InstanceID == nil {
			return invalidRequest("InstanceId can't be null.")
		}
	default:
		return invalidRequest("MemberEpoch is invalid.")
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil {
			return apierr.Errorf(kerr.InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *req.SubscribedTopicRegex, err)
		}
	}
	if req.ServerAssignor != nil {
		if _, ok := assignorsByName[*req.ServerAssignor]; !ok || !s.assignorEnabled(*req.ServerAssignor) {
			return apierr.Errorf(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %v.", *req.ServerAssignor, s.cfg.ConsumerAssignors)
		}
	}
	return nil
}

func (s *Shard) assignorEnabled(name string) bool {
	a := assignorsByName[name]
	for _, n := range s.cfg.ConsumerAssignors {
		if b, ok := assignorsByName[n]; ok && b.name() == a.name() {
			return true
		}
	}
	return false
}

// consumerGroupHeartbeat handles a ConsumerGroupHeartbeat.
func (s *Shard) consumerGroupHeartbeat(rc RequestContext, req *kmsg.ConsumerGroupHeartbeatRequest) (heartbeatResult, error) {
	if err := s.validateConsumerGroupHeartbeat(rc, req); err != nil {
		return heartbeatResult{}, err
	}
	if req.MemberEpoch == leaveGroupMemberEpoch || req.MemberEpoch == leaveGroupStaticMemberEpoch {
		return s.consumerGroupLeave(req.Group, req.InstanceID, req.MemberID, req.MemberEpoch)
	}
	return s.consumerGroupJoinOrHeartbeat(rc, req)
}

func (s *Shard) consumerGroupJoinOrHeartbeat(rc RequestContext, req *kmsg.ConsumerGroupHeartbeatRequest) (heartbeatResult, error) {
	var res heartbeatResult
	now := s.now().UnixMilli()
	var records []runtime.Record
	create := req.MemberEpoch == 0
	g, records, err := s.getOrMaybeCreateConsumerGroup(req.Group, create, records)
	if err != nil {
		return res, err
	}
	memberID := req.MemberID
	if memberID == "" {
		memberID = uuid.Random().String() // v0: the coordinator makes the id
	}
	if err := s.throwIfConsumerGroupIsFull(g, memberID); err != nil {
		return res, err
	}
	owned := ownedFromRequest(req.Topics)
	var m *ConsumerGroupMember
	if req.InstanceID == nil {
		m, err = s.getOrMaybeSubscribeDynamicMember(g, memberID, req.MemberEpoch, owned, create, false)
	} else {
		m, records, err = s.getOrMaybeSubscribeStaticMember(g, memberID, req.MemberEpoch, req.InstanceID, owned, create, false, records)
	}
	if err != nil {
		return res, err
	}

	// 1. The member, its subscription, the group epoch.
	updated := m.copy()
	if req.InstanceID != nil {
		updated.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		updated.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		updated.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.ServerAssignor != nil {
		updated.serverAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		updated.subscribedTopicNames = sortedUnique(req.SubscribedTopicNames)
	}
	if req.SubscribedTopicRegex != nil {
		updated.subscribedTopicRegex = *req.SubscribedTopicRegex
	}
	updated.clientID, updated.clientHost, updated.classic = rc.ClientID, rc.ClientHost, nil

	bump := g.groupEpoch == 0 // a new group moves off epoch 0
	changed, records := s.memberSubscriptionChanged(g.groupID, m, updated, records)
	bump = bump || changed
	regexBump, records, err := s.maybeUpdateRegularExpressions(g, m, updated, records, now)
	if err != nil {
		return res, err
	}
	bump = bump || regexBump

	epoch, md := g.groupEpoch, g.subscriptionMetadata
	if bump || g.hasMetadataExpired(now) {
		epoch, md, records = s.updateSubscriptionMetadata(g, bump, m, updated, records, now)
	}

	// 2. The target assignment, if the epoch moved past it.
	targetEpoch, target := g.assignmentEpoch, g.targetAssignmentFor(updated.memberID, updated.instanceID)
	if epoch > g.assignmentEpoch {
		var err error
		target, records, err = s.updateTargetAssignment(g, epoch, m, updated, md, records)
		if err != nil {
			return res, err
		}
		targetEpoch = epoch
	}

	// 3. Reconcile the member towards it.
	updated, records, err = s.maybeReconcile(g, updated, targetEpoch, target, owned, records)
	if err != nil {
		return res, err
	}
	s.scheduleConsumerSessionTimeout(g.groupID, memberID, s.consumerSessionTimeout(g.groupID))

	id := updated.memberID
	resp := &kmsg.ConsumerGroupHeartbeatResponse{MemberID: &id, MemberEpoch: updated.memberEpoch,
		HeartbeatIntervalMillis: int32(s.consumerHeartbeatInterval(g.groupID).Milliseconds())}
	// The assignment goes out when the member joins, sends a full
	// request (after an error), or it changed.
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.MemberEpoch == 0 || full || !m.assigned.equal(updated.assigned) {
		resp.Assignment = heartbeatAssignment(updated.assigned)
	}
	res.Records, res.Response = records, resp
	return res, nil
}

func heartbeatAssignment(a assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := &kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}}
	for _, t := range a.sortedTopics() {
		out.Topics = append(out.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: t, Partitions: append([]int32(nil), a[t]...)})
	}
	return out
}

// getOrMaybeCreateConsumerGroup returns the consumer group, creating it
// (create) over nothing, an empty classic group (tombstoned), or a
// classic group that may be upgraded online.
func (s *Shard) getOrMaybeCreateConsumerGroup(id string, create bool, records []runtime.Record) (*ConsumerGroup, []runtime.Record, error) {
	switch g := s.groups[id].(type) {
	case *ConsumerGroup:
		return g, records, nil
	case nil:
		if !create {
			return nil, records, apierr.Errorf(kerr.GroupIDNotFound, "Consumer group %s not found.", id)
		}
		return newConsumerGroup(id), records, nil
	case *ClassicGroup:
		if create && g.isEmpty() {
			// An empty classic group: tombstone it; the records
			// that follow create the consumer group.
			return newConsumerGroup(id), append(records, g.tombstones()...), nil
		}
		if create && s.validateOnlineUpgrade(g) {
			return s.convertToConsumerGroup(g, records)
		}
		return nil, records, apierr.Errorf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", id)
	}
	return nil, records, groupIDNotFound(id)
}

func (s *Shard) throwIfConsumerGroupIsFull(g *ConsumerGroup, memberID string) error {
	if g.numMembers() >= s.cfg.ConsumerMaxSize && (memberID == "" || !g.hasMember(memberID)) {
		return apierr.Errorf(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", s.cfg.ConsumerMaxSize)
	}
	return nil
}

// memberEpochValid is throwIfConsumerGroupMemberEpochIsInvalid: a member
// may come back with its previous epoch if it owns a subset of its
// assignment (the response with the new epoch was lost).
func memberEpochValid(m *ConsumerGroupMember, received int32, owned []topicPartitions) error {
	if received > m.memberEpoch {
		return apierr.Errorf(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.memberEpoch)
	}
	if received < m.memberEpoch {
		subset := owned != nil
		for _, t := range owned {
			for _, p := range t.Partitions {
				if !m.assigned.has(t.TopicID, p) {
					subset = false
				}
			}
		}
		if received != m.previousMemberEpoch || !subset {
			return apierr.Errorf(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.memberEpoch)
		}
	}
	return nil
}

func (s *Shard) getOrMaybeSubscribeDynamicMember(g *ConsumerGroup, memberID string, epoch int32, owned []topicPartitions, create, classic bool) (*ConsumerGroupMember, error) {
	m, err := g.getOrMaybeCreateMember(memberID, create)
	if err != nil {
		return nil, err
	}
	if !classic {
		if err := memberEpochValid(m, epoch, owned); err != nil {
			return nil, err
		}
	}
	if create && !g.hasMember(memberID) {
		proto := "consumer"
		if classic {
			proto = "classic"
		}
		s.log.Info("member joins the consumer group", "group", g.groupID, "member", memberID, "protocol", proto)
	}
	return m, nil
}

func (s *Shard) getOrMaybeSubscribeStaticMember(g *ConsumerGroup, memberID string, epoch int32, instanceID *string, owned []topicPartitions, create, classic bool, records []runtime.Record) (*ConsumerGroupMember, []runtime.Record, error) {
	existing := g.staticMember(instanceID)
	if create {
		if existing == nil {
			m, err := g.getOrMaybeCreateMember(memberID, true)
			return m, records, err
		}
		if !classic && !existing.useClassicProtocol() && existing.memberEpoch != leaveGroupStaticMemberEpoch {
			// Replaced only once the previous instance said it
			// leaves (epoch -2).
			return nil, records, apierr.Errorf(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group %s because the instance id is owned by member %s.", memberID, *instanceID, g.groupID, existing.memberID)
		}
		m := existing.copy()
		m.memberID = memberID
		m.memberEpoch, m.previousMemberEpoch = 0, 0
		records = s.replaceMember(records, g, existing, m)
		s.log.Info("static member re-joins the consumer group", "group", g.groupID, "instance_id", *instanceID, "member", memberID, "replaced", existing.memberID)
		return m, records, nil
	}
	if existing == nil {
		return nil, records, apierr.Errorf(kerr.UnknownMemberID, "Instance id %s is unknown.", *instanceID)
	}
	if existing.memberID != memberID {
		return nil, records, apierr.Errorf(kerr.FencedInstanceID, "Static member %s with instance id %s is fenced by existing member %s.", memberID, *instanceID, existing.memberID)
	}
	if !classic {
		if err := memberEpochValid(existing, epoch, owned); err != nil {
			return nil, records, err
		}
	}
	return existing, records, nil
}

// replaceMember writes a static member's records under its new member id.
func (s *Shard) replaceMember(records []runtime.Record, g *ConsumerGroup, old, m *ConsumerGroupMember) []runtime.Record {
	records = removeMemberRecords(records, g.groupID, old.memberID)
	records = append(records,
		consumerGroupMemberSubscriptionRecord(g.groupID, m.memberID, m.subscriptionValue()),
		consumerGroupTargetAssignmentRecord(g.groupID, m.memberID, g.targetAssignmentOf(old.memberID).toRecord()),
		consumerGroupCurrentAssignmentRecord(g.groupID, m.memberID, m.assignmentValue()))
	return records
}

func removeMemberRecords(records []runtime.Record, groupID, memberID string) []runtime.Record {
	return append(records,
		consumerGroupCurrentAssignmentTombstone(groupID, memberID),
		consumerGroupTargetAssignmentTombstone(groupID, memberID),
		consumerGroupMemberSubscriptionTombstone(groupID, memberID))
}

// memberSubscriptionChanged writes the member's subscription record if
// anything in it changed, and reports whether its topics or regex did.
func (s *Shard) memberSubscriptionChanged(groupID string, m, updated *ConsumerGroupMember, records []runtime.Record) (bool, []runtime.Record) {
	if updated.equal(m) {
		return false, records
	}
	records = append(records, consumerGroupMemberSubscriptionRecord(groupID, updated.memberID, updated.subscriptionValue()))
	return !equalStrings(updated.subscribedTopicNames, m.subscribedTopicNames) || updated.subscribedTopicRegex != m.subscribedTopicRegex, records
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// updateSubscriptionMetadata recomputes the subscribed topics' metadata;
// a change (or bump) bumps the group epoch.
func (s *Shard) updateSubscriptionMetadata(g *ConsumerGroup, bump bool, m, updated *ConsumerGroupMember, records []runtime.Record, now int64) (int32, map[string]topicMetadata, []runtime.Record) {
	names := g.computeSubscribedTopicNames(m, updated)
	md := computeSubscriptionMetadata(names, s.topics)
	if !equalSubscriptionMetadata(md, g.subscriptionMetadata) {
		bump = true
		records = append(records, subscriptionMetadataRecord(g.groupID, md))
	}
	epoch := g.groupEpoch
	if bump {
		epoch++
		records = append(records, consumerGroupEpochRecord(g.groupID, epoch))
		s.log.Info("bumped group epoch", "group", g.groupID, "epoch", epoch)
		s.metrics.consumerRebalance()
	}
	g.setMetadataRefreshDeadline(now+metadataRefreshInterval.Milliseconds(), epoch)
	return epoch, md, records
}

// updateTargetAssignment computes the group's new target assignment and
// returns the member's.
func (s *Shard) updateTargetAssignment(g *ConsumerGroup, epoch int32, m, updated *ConsumerGroupMember, md map[string]topicMetadata, records []runtime.Record) (assignment, []runtime.Record, error) {
	name := g.computePreferredServerAssignor(m, updated)
	if name == "" {
		name = s.cfg.ConsumerAssignors[0]
	}
	start := time.Now()
	res, err := s.buildTargetAssignment(g, epoch, updated, md, name)
	if err != nil {
		return nil, records, apierr.Errorf(kerr.UnknownServerError, "Failed to compute a new target assignment for epoch %d: %v", epoch, err)
	}
	s.log.Debug("computed a new target assignment", "group", g.groupID, "epoch", epoch, "assignor", name, "took", time.Since(start))
	records = append(records, res.records...)
	if a, ok := res.targets[updated.memberID]; ok {
		return a, records, nil
	}
	return assignment{}, records, nil
}

// maybeReconcile moves the member towards its target; a change is a
// current-assignment record, and starts or stops its rebalance timeout.
func (s *Shard) maybeReconcile(g *ConsumerGroup, m *ConsumerGroupMember, targetEpoch int32, target assignment, owned []topicPartitions, records []runtime.Record) (*ConsumerGroupMember, []runtime.Record, error) {
	if m.isReconciledTo(targetEpoch) {
		return m, records, nil
	}
	updated, err := reconcileMember(m, targetEpoch, target, g.currentPartitionEpoch, owned)
	if err != nil {
		return nil, records, err
	}
	if updated.equal(m) {
		return m, records, nil
	}
	records = append(records, consumerGroupCurrentAssignmentRecord(g.groupID, updated.memberID, updated.assignmentValue()))
	if !updated.useClassicProtocol() {
		if updated.state == memberUnrevokedPartitions {
			s.scheduleConsumerRebalanceTimeout(g.groupID, updated.memberID, updated.memberEpoch, updated.rebalanceTimeoutMs)
		} else {
			s.timer.Cancel(consumerRebalanceTimeoutKey(g.groupID, updated.memberID))
		}
	}
	return updated, records, nil
}

// consumerGroupLeave handles epoch -1 (leave) and -2 (a static member
// leaves for now, keeping its place).
func (s *Shard) consumerGroupLeave(groupID string, instanceID *string, memberID string, epoch int32) (heartbeatResult, error) {
	var res heartbeatResult
	g, ok := s.groups[groupID].(*ConsumerGroup)
	if !ok {
		return res, apierr.Errorf(kerr.GroupIDNotFound, "Consumer group %s not found.", groupID)
	}
	id := memberID
	resp := &kmsg.ConsumerGroupHeartbeatResponse{MemberID: &id, MemberEpoch: epoch}
	if instanceID == nil {
		m, err := g.member(memberID)
		if err != nil {
			return res, err
		}
		s.log.Info("member left the consumer group", "group", groupID, "member", memberID)
		return s.consumerGroupFenceMember(g, m, resp), nil
	}
	m := g.staticMember(instanceID)
	if m == nil {
		return res, apierr.Errorf(kerr.UnknownMemberID, "Instance id %s is unknown.", *instanceID)
	}
	if m.memberID != memberID {
		return res, apierr.Errorf(kerr.FencedInstanceID, "Static member %s with instance id %s is fenced by existing member %s.", memberID, *instanceID, m.memberID)
	}
	if epoch == leaveGroupStaticMemberEpoch {
		// It keeps its place: epoch -2 until it rejoins.
		leaving := m.copy()
		leaving.memberEpoch = leaveGroupStaticMemberEpoch
		leaving.pendingRevocation = assignment{}
		res.Records = []runtime.Record{consumerGroupCurrentAssignmentRecord(groupID, m.memberID, leaving.assignmentValue())}
		res.Response = resp
		s.log.Info("static member temporarily left the consumer group", "group", groupID, "member", memberID, "instance_id", *instanceID)
		return res, nil
	}
	s.log.Info("static member left the consumer group", "group", groupID, "member", memberID, "instance_id", *instanceID)
	return s.consumerGroupFenceMember(g, m, resp), nil
}

// consumerGroupFenceMember removes a member and bumps the group epoch (or
// downgrades the group if only classic members remain).
func (s *Shard) consumerGroupFenceMember(g *ConsumerGroup, m *ConsumerGroupMember, resp *kmsg.ConsumerGroupHeartbeatResponse) heartbeatResult {
	if s.validateOnlineDowngradeWithFencedMembers(g, []*ConsumerGroupMember{m}) {
		records := s.convertToClassicGroup(g, []*ConsumerGroupMember{m}, nil)
		return heartbeatResult{Records: records, Response: resp, NoReplay: true}
	}
	records := removeMemberRecords(nil, g.groupID, m.memberID)
	if m.subscribedTopicRegex != "" && g.subscribedRegexes[m.subscribedTopicRegex] == 1 {
		records = append(records, consumerGroupRegexTombstone(g.groupID, m.subscribedTopicRegex))
	}
	md := computeSubscriptionMetadata(g.computeSubscribedTopicNames(m, nil), s.topics)
	if !equalSubscriptionMetadata(md, g.subscriptionMetadata) {
		records = append(records, subscriptionMetadataRecord(g.groupID, md))
	}
	records = append(records, consumerGroupEpochRecord(g.groupID, g.groupEpoch+1))
	s.metrics.consumerRebalance()
	s.cancelConsumerTimers(g.groupID, m.memberID)
	return heartbeatResult{Records: records, Response: resp}
}

// fenceMemberOperation is the session or rebalance timeout's operation.
func (s *Shard) fenceMemberOperation(groupID, memberID, reason string, onlyEpoch int32) voidResult {
	g, ok := s.groups[groupID].(*ConsumerGroup)
	if !ok {
		return emptyResult
	}
	m := g.members[memberID]
	if m == nil || (onlyEpoch >= 0 && m.memberEpoch != onlyEpoch) {
		return emptyResult
	}
	s.log.Info("member fenced from the consumer group", "group", groupID, "member", memberID, "reason", reason)
	s.metrics.consumerMemberExpired()
	r := s.consumerGroupFenceMember(g, m, nil)
	return voidResult{Records: r.Records, NoReplay: r.NoReplay}
}

func (s *Shard) scheduleConsumerSessionTimeout(groupID, memberID string, d time.Duration) {
	s.timer.Schedule(consumerSessionTimeoutKey(groupID, memberID), d, func() (voidResult, error) {
		return s.fenceMemberOperation(groupID, memberID, "the member session expired", -1), nil
	})
}

func (s *Shard) scheduleConsumerRebalanceTimeout(groupID, memberID string, epoch, timeoutMs int32) {
	s.timer.Schedule(consumerRebalanceTimeoutKey(groupID, memberID), durationMs(timeoutMs), func() (voidResult, error) {
		return s.fenceMemberOperation(groupID, memberID, fmt.Sprintf("it failed to transition from epoch %d within %dms", epoch, timeoutMs), epoch), nil
	})
}

func (s *Shard) cancelConsumerTimers(groupID, memberID string) {
	s.timer.Cancel(consumerSessionTimeoutKey(groupID, memberID))
	s.timer.Cancel(consumerRebalanceTimeoutKey(groupID, memberID))
	s.timer.Cancel(consumerJoinKey(groupID, memberID))
	s.timer.Cancel(consumerSyncKey(groupID, memberID))
}
