package group

import (
	"bytes"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberState is Kafka's MemberState of a consumer-protocol member.
type memberState int8

const (
	memberStable               memberState = 0   // reconciled to its epoch
	memberUnrevokedPartitions  memberState = 1   // must revoke partitions first
	memberUnreleasedPartitions memberState = 2   // waits for partitions others still hold
	memberUnknown              memberState = 127 // a state from a newer coordinator
)

// Member epochs with a meaning (ConsumerGroupHeartbeatRequest).
const (
	leaveGroupMemberEpoch       int32 = -1 // the member leaves
	leaveGroupStaticMemberEpoch int32 = -2 // a static member leaves for now
)

// assignment is partitions by topic id, each list sorted and without
// duplicates. Values are never changed in place.
type assignment map[[16]byte][]int32

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

func (a assignment) has(topic [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[topic], p)
	return ok
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// sortedTopics returns the topic ids in byte order.
func (a assignment) sortedTopics() [][16]byte {
	ts := make([][16]byte, 0, len(a))
	for t := range a {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return bytes.Compare(ts[i][:], ts[j][:]) < 0 })
	return ts
}

func (a assignment) toRecord() []topicPartitions {
	out := make([]topicPartitions, 0, len(a))
	for _, t := range a.sortedTopics() {
		out = append(out, topicPartitions{TopicID: t, Partitions: slices.Clone(a[t])})
	}
	return out
}

func assignmentFromRecord(tps []topicPartitions) assignment {
	a := assignment{}
	for _, tp := range tps {
		if len(tp.Partitions) == 0 {
			continue
		}
		ps := slices.Clone(tp.Partitions)
		slices.Sort(ps)
		a[tp.TopicID] = slices.Compact(ps)
	}
	return a
}

// addPartition returns a with p of topic added (a new map).
func (a assignment) clone() assignment {
	out := make(assignment, len(a))
	for t, ps := range a {
		out[t] = ps
	}
	return out
}

// intersect, subtract: per topic set operations on sorted lists.
func intersectSorted(a, b []int32) []int32 {
	var out []int32
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return out
}

func subtractSorted(a, b []int32) []int32 {
	var out []int32
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			continue
		}
		out = append(out, x)
	}
	return out
}

func unionSorted(a, b []int32) []int32 {
	out := make([]int32, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// ConsumerGroupMember is Kafka's ConsumerGroupMember: a member of a
// consumer-protocol group, which may itself speak the classic protocol
// (classic != nil) in a group being migrated. Values are immutable: a
// change builds a new member.
type ConsumerGroupMember struct {
	memberID             string
	memberEpoch          int32
	previousMemberEpoch  int32
	state                memberState
	instanceID           *string
	rackID               *string
	rebalanceTimeoutMs   int32
	clientID             string
	clientHost           string
	subscribedTopicNames []string // sorted
	subscribedTopicRegex string   // "" if none
	serverAssignor       string   // "" if none
	assigned             assignment
	pendingRevocation    assignment
	classic              *classicMemberMetadata
}

func newConsumerGroupMember(id string) *ConsumerGroupMember {
	return &ConsumerGroupMember{memberID: id, rebalanceTimeoutMs: -1, assigned: assignment{}, pendingRevocation: assignment{}}
}

func (m *ConsumerGroupMember) copy() *ConsumerGroupMember {
	c := *m
	return &c
}

func (m *ConsumerGroupMember) useClassicProtocol() bool { return m.classic != nil }

// isReconciledTo: stable at the target assignment's epoch.
func (m *ConsumerGroupMember) isReconciledTo(epoch int32) bool {
	return m.state == memberStable && m.memberEpoch == epoch
}

// updateMemberEpoch is the Builder's updateMemberEpoch.
func (m *ConsumerGroupMember) updateMemberEpoch(epoch int32) {
	m.previousMemberEpoch = m.memberEpoch
	m.memberEpoch = epoch
}

func equalStrPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// equal is ConsumerGroupMember.equals.
func (m *ConsumerGroupMember) equal(o *ConsumerGroupMember) bool {
	return m.memberID == o.memberID && m.memberEpoch == o.memberEpoch && m.previousMemberEpoch == o.previousMemberEpoch &&
		m.state == o.state && equalStrPtr(m.instanceID, o.instanceID) && equalStrPtr(m.rackID, o.rackID) &&
		m.rebalanceTimeoutMs == o.rebalanceTimeoutMs && m.clientID == o.clientID && m.clientHost == o.clientHost &&
		slices.Equal(m.subscribedTopicNames, o.subscribedTopicNames) && m.subscribedTopicRegex == o.subscribedTopicRegex &&
		m.serverAssignor == o.serverAssignor && m.assigned.equal(o.assigned) && m.pendingRevocation.equal(o.pendingRevocation) &&
		equalClassic(m.classic, o.classic)
}

func equalClassic(a, b *classicMemberMetadata) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.SessionTimeoutMs == b.SessionTimeoutMs && slices.EqualFunc(a.SupportedProtocols, b.SupportedProtocols, func(x, y classicProtocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

// sameSubscriptionRecord reports whether the member's subscription record
// (ConsumerGroupMemberMetadata) would be unchanged.
func (m *ConsumerGroupMember) sameSubscriptionRecord(o *ConsumerGroupMember) bool {
	return equalStrPtr(m.instanceID, o.instanceID) && equalStrPtr(m.rackID, o.rackID) &&
		m.rebalanceTimeoutMs == o.rebalanceTimeoutMs && m.clientID == o.clientID && m.clientHost == o.clientHost &&
		slices.Equal(m.subscribedTopicNames, o.subscribedTopicNames) && m.subscribedTopicRegex == o.subscribedTopicRegex &&
		m.serverAssignor == o.serverAssignor && equalClassic(m.classic, o.classic)
}

func (m *ConsumerGroupMember) subscriptionValue() *consumerGroupMemberMetadataValue {
	v := &consumerGroupMemberMetadataValue{
		InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID, ClientHost: m.clientHost,
		SubscribedTopicNames: slices.Clone(m.subscribedTopicNames), RebalanceTimeoutMs: m.rebalanceTimeoutMs,
		ServerAssignor: optString(m.serverAssignor), SubscribedTopicRegex: optString(m.subscribedTopicRegex),
		ClassicMemberMetadata: m.classic,
	}
	if v.SubscribedTopicNames == nil {
		v.SubscribedTopicNames = []string{}
	}
	return v
}

// updateWithSubscription applies a ConsumerGroupMemberMetadata value.
func (m *ConsumerGroupMember) updateWithSubscription(v consumerGroupMemberMetadataValue) {
	m.instanceID, m.rackID, m.clientID, m.clientHost = v.InstanceID, v.RackID, v.ClientID, v.ClientHost
	m.subscribedTopicNames = sortedUnique(v.SubscribedTopicNames)
	m.subscribedTopicRegex = strOr(v.SubscribedTopicRegex, "")
	m.rebalanceTimeoutMs = v.RebalanceTimeoutMs
	m.serverAssignor = strOr(v.ServerAssignor, "")
	m.classic = v.ClassicMemberMetadata
}

func (m *ConsumerGroupMember) assignmentValue() *consumerGroupCurrentMemberAssignmentValue {
	return &consumerGroupCurrentMemberAssignmentValue{
		MemberEpoch: m.memberEpoch, PreviousMemberEpoch: m.previousMemberEpoch, State: int8(m.state),
		AssignedPartitions: m.assigned.toRecord(), PartitionsPendingRevocation: m.pendingRevocation.toRecord(),
	}
}

// updateWithAssignment applies a ConsumerGroupCurrentMemberAssignment
// value.
func (m *ConsumerGroupMember) updateWithAssignment(v consumerGroupCurrentMemberAssignmentValue) {
	m.memberEpoch, m.previousMemberEpoch = v.MemberEpoch, v.PreviousMemberEpoch
	m.state = memberState(v.State)
	switch m.state {
	case memberStable, memberUnrevokedPartitions, memberUnreleasedPartitions:
	default:
		m.state = memberUnknown
	}
	m.assigned = assignmentFromRecord(v.AssignedPartitions)
	m.pendingRevocation = assignmentFromRecord(v.PartitionsPendingRevocation)
}

// classicSessionTimeoutMs is the session timeout of a classic member.
func (m *ConsumerGroupMember) classicSessionTimeoutMs() int32 {
	if m.classic == nil {
		return 0
	}
	return m.classic.SessionTimeoutMs
}

func (m *ConsumerGroupMember) classicProtocolNames() map[string]bool {
	out := map[string]bool{}
	if m.classic != nil {
		for _, p := range m.classic.SupportedProtocols {
			out[p.Name] = true
		}
	}
	return out
}

// classicProtocols returns the member's classic protocols as JoinGroup
// protocols.
func (m *ConsumerGroupMember) classicProtocols() []protocol {
	if m.classic == nil {
		return nil
	}
	out := make([]protocol, len(m.classic.SupportedProtocols))
	for i, p := range m.classic.SupportedProtocols {
		out[i] = protocol{name: p.Name, metadata: p.Metadata}
	}
	return out
}

func sortedUnique(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := slices.Clone(ss)
	slices.Sort(out)
	return slices.Compact(out)
}

// describe is asConsumerGroupDescribeMember.
func (m *ConsumerGroupMember) describe(target assignment, names func([16]byte) (string, bool)) kmsg.ConsumerGroupDescribeResponseGroupMember {
	d := kmsg.NewConsumerGroupDescribeResponseGroupMember()
	d.MemberID, d.InstanceID, d.RackID, d.MemberEpoch = m.memberID, m.instanceID, m.rackID, m.memberEpoch
	d.ClientID, d.ClientHost = m.clientID, m.clientHost
	d.SubscribedTopics = slices.Clone(m.subscribedTopicNames)
	if d.SubscribedTopics == nil {
		d.SubscribedTopics = []string{}
	}
	d.SubscribedTopicRegex = optString(m.subscribedTopicRegex)
	d.Assignment = describeAssignment(m.assigned, names)
	d.TargetAssignment = describeAssignment(target, names)
	d.MemberType = 1
	if m.useClassicProtocol() {
		d.MemberType = 0
	}
	return d
}

func describeAssignment(a assignment, names func([16]byte) (string, bool)) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range a.sortedTopics() {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID = t
		if n, ok := names(t); ok {
			tp.Topic = n
		}
		tp.Partitions = slices.Clone(a[t])
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}
