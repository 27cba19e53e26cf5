package group

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// Reconciliation of a member towards its target assignment (Kafka's
// CurrentAssignmentBuilder) and computation of the group's target
// assignment (TargetAssignmentBuilder).

// ownedFromRequest converts a heartbeat's owned partitions; nil stays nil
// (the member did not say).
func ownedFromRequest(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) []topicPartitions {
	if ts == nil {
		return nil
	}
	out := make([]topicPartitions, 0, len(ts))
	for _, t := range ts {
		out = append(out, topicPartitions{TopicID: t.TopicID, Partitions: t.Partitions})
	}
	return out
}

// reconcileMember is CurrentAssignmentBuilder.build: the member's next
// state, epoch and assignment given the target and what it owns (nil:
// unknown). It never changes m.
func reconcileMember(m *ConsumerGroupMember, targetEpoch int32, target assignment, partitionEpoch func([16]byte, int32) int32, owned []topicPartitions) (*ConsumerGroupMember, error) {
	ownsRevoked := func(revoking assignment) bool {
		if owned == nil {
			return true
		}
		for _, t := range owned {
			for _, p := range t.Partitions {
				if revoking.has(t.TopicID, p) {
					return true
				}
			}
		}
		return false
	}
	next := func(epoch int32) *ConsumerGroupMember {
		return computeNextAssignment(m, epoch, targetEpoch, target, partitionEpoch, ownsRevoked)
	}
	switch m.state {
	case memberStable:
		if m.memberEpoch != targetEpoch {
			return next(m.memberEpoch), nil
		}
		return m, nil
	case memberUnrevokedPartitions:
		if ownsRevoked(m.pendingRevocation) {
			return m, nil
		}
		return next(m.memberEpoch + 1), nil
	case memberUnreleasedPartitions:
		return next(m.memberEpoch), nil
	default:
		if owned == nil || len(owned) > 0 {
			return nil, apierr.Errorf(kerr.FencedMemberEpoch, "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.")
		}
		return next(targetEpoch), nil
	}
}

func computeNextAssignment(m *ConsumerGroupMember, epoch, targetEpoch int32, target assignment, partitionEpoch func([16]byte, int32) int32, ownsRevoked func(assignment) bool) *ConsumerGroupMember {
	hasUnreleased := false
	newAssigned, pendingRevocation, pendingAssignment := assignment{}, assignment{}, assignment{}
	topics := map[[16]byte]bool{}
	for t := range target {
		topics[t] = true
	}
	for t := range m.assigned {
		topics[t] = true
	}
	for t := range topics {
		current := m.assigned[t]
		kept := intersectSorted(current, target[t])
		revoke := subtractSorted(current, kept)
		var toAssign []int32
		for _, p := range subtractSorted(target[t], kept) {
			if partitionEpoch(t, p) != -1 {
				hasUnreleased = true // another member still holds it
				continue
			}
			toAssign = append(toAssign, p)
		}
		if len(kept) > 0 {
			newAssigned[t] = kept
		}
		if len(revoke) > 0 {
			pendingRevocation[t] = revoke
		}
		if len(toAssign) > 0 {
			pendingAssignment[t] = toAssign
		}
	}
	n := m.copy()
	switch {
	case len(pendingRevocation) > 0 && ownsRevoked(pendingRevocation):
		// Revoke first: the member stays at its epoch until it no
		// longer reports the revoked partitions.
		n.state = memberUnrevokedPartitions
		n.updateMemberEpoch(epoch)
		n.assigned, n.pendingRevocation = newAssigned, pendingRevocation
	case len(pendingAssignment) > 0:
		for t, ps := range pendingAssignment {
			newAssigned[t] = unionSorted(newAssigned[t], ps)
		}
		n.state = memberStable
		if hasUnreleased {
			n.state = memberUnreleasedPartitions
		}
		n.updateMemberEpoch(targetEpoch)
		n.assigned, n.pendingRevocation = newAssigned, assignment{}
	case hasUnreleased:
		n.state = memberUnreleasedPartitions
		n.updateMemberEpoch(targetEpoch)
		n.assigned, n.pendingRevocation = newAssigned, assignment{}
	default:
		n.state = memberStable
		n.updateMemberEpoch(targetEpoch)
		n.assigned, n.pendingRevocation = newAssigned, assignment{}
	}
	return n
}

// targetAssignmentResult is what TargetAssignmentBuilder.build returns.
type targetAssignmentResult struct {
	records []runtime.Record
	targets map[string]assignment
}

// buildTargetAssignment computes the group's new target assignment at
// epoch with updated in place of its old self (and of the static member
// it replaces): one record per member whose target changed, then the
// assignment epoch.
func (s *Shard) buildTargetAssignment(g *ConsumerGroup, epoch int32, updated *ConsumerGroupMember, md map[string]topicMetadata, assignorName string) (targetAssignmentResult, error) {
	a, ok := assignorsByName[assignorName]
	if !ok {
		a = assignorsByName[s.cfg.ConsumerAssignors[0]]
	}
	members := map[string]*ConsumerGroupMember{}
	for id, m := range g.members {
		members[id] = m
	}
	if updated != nil {
		members[updated.memberID] = updated
		if prev := g.staticMemberID(updated.instanceID); prev != "" && prev != updated.memberID {
			delete(members, prev)
		}
	}
	spec := assignorSpec{topics: map[[16]byte]int32{}}
	for _, t := range md {
		spec.topics[t.id] = t.numPartitions
	}
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := members[id]
		current := g.targetAssignmentFor(id, m.instanceID)
		spec.members = append(spec.members, assignorMember{id: id, subscribed: g.subscribedTopicIDs(m, md), current: current})
	}
	targets := a.assign(spec)
	res := targetAssignmentResult{targets: targets}
	for _, id := range ids {
		old, had := g.targetAssignment[id]
		if !had || !old.equal(targets[id]) {
			res.records = append(res.records, consumerGroupTargetAssignmentRecord(g.groupID, id, targets[id].toRecord()))
		}
	}
	res.records = append(res.records, consumerGroupTargetAssignmentEpochRecord(g.groupID, epoch))
	return res, nil
}
