package group

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/coordinator/runtime"
)

// ListGroups, DescribeGroups and DeleteGroups on one shard, and the replay
// of a classic group's record.

// listGroups is GroupMetadataManager.listGroups: states compared without
// case, types parsed without case (an unknown type matches nothing).
func (s *Shard) listGroups(states, types []string) []kmsg.ListGroupsResponseGroup {
	stateSet := map[string]bool{}
	for _, st := range states {
		stateSet[strings.ToLower(strings.TrimSpace(st))] = true
	}
	typeSet := map[groupType]bool{}
	for _, t := range types {
		if gt, ok := parseGroupType(t); ok {
			typeSet[gt] = true
		}
	}
	var out []kmsg.ListGroupsResponseGroup
	for _, id := range s.sortedGroupIDs() {
		g := s.groups[id]
		if len(states) > 0 && !stateSet[strings.ToLower(g.stateString())] {
			continue
		}
		if len(types) > 0 && !typeSet[g.kind()] {
			continue
		}
		out = append(out, g.asListed())
	}
	return out
}

// describeGroups is GroupMetadataManager.describeGroups for classic groups:
// a group that does not exist (or is not classic) is Dead, with
// GROUP_ID_NOT_FOUND from v6 (KIP-1043).
func (s *Shard) describeGroups(ids []string, apiVersion int16) []kmsg.DescribeGroupsResponseGroup {
	out := make([]kmsg.DescribeGroupsResponseGroup, 0, len(ids))
	for _, id := range ids {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group = id
		switch g := s.groups[id].(type) {
		case *ClassicGroup:
			d.State, d.ProtocolType = g.state.String(), g.protocolType
			stable := g.is(stateStable)
			if stable {
				d.Protocol = g.protocolName
			}
			d.Members = []kmsg.DescribeGroupsResponseGroupMember{}
			for _, m := range g.orderedMembers() {
				d.Members = append(d.Members, m.describe(g.protocolName, stable))
			}
		case *ConsumerGroup:
			d = s.describeConsumerGroupAsClassic(g, apiVersion)
		default:
			// Not a group, or a share group: Dead (Kafka's classicGroup
			// throws GROUP_ID_NOT_FOUND for a share group too).
			d.State = stateDead.String()
			if apiVersion >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + id + " not found."
				if _, ok := g.(*ShareGroup); ok {
					msg = "Group " + id + " is not a classic group."
				}
				d.ErrorMessage = &msg
			}
		}
		out = append(out, d)
	}
	return out
}

// deleteGroups is GroupCoordinatorShard.deleteGroups: for each group that
// may be deleted (it exists and is empty), tombstones for its offsets and
// for the group.
func (s *Shard) deleteGroups(ids []string) (runtime.Result[[]kmsg.DeleteGroupsResponseGroup], error) {
	var res runtime.Result[[]kmsg.DeleteGroupsResponseGroup]
	deletedOffsets := 0
	for _, id := range ids {
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = id
		g := s.groups[id]
		var err error
		if g == nil {
			err = groupIDNotFound(id)
		} else {
			err = g.validateDeleteGroup()
		}
		if err != nil {
			r.ErrorCode = errCode(err)
			if ae, ok := err.(*apierr.Error); ok {
				r.ErrorMessage = &ae.Msg
			}
			res.Response = append(res.Response, r)
			continue
		}
		var n int
		res.Records, n = s.deleteAllOffsets(id, res.Records)
		deletedOffsets += n
		res.Records = append(res.Records, g.tombstones()...)
		res.Response = append(res.Response, r)
	}
	s.metrics.offsetDeletions(deletedOffsets)
	return res, nil
}

// replayGroupMetadata applies a GroupMetadata record: the classic group as
// of its last durable generation, Empty or Stable (Kafka rebuilds it the
// same way on load), or a tombstone removing it.
func (s *Shard) replayGroupMetadata(groupID string, value []byte) error {
	if value == nil {
		s.removeGroup(groupID)
		return nil
	}
	v := kmsg.NewGroupMetadataValue()
	if err := v.ReadFrom(value); err != nil {
		return apierr.Errorf(kerr.CorruptMessage, "GroupMetadataValue of group %s: %v", groupID, err)
	}
	g := newClassicGroup(groupID, s.now)
	g.generationID = v.Generation
	g.protocolType = v.ProtocolType
	g.protocolName = strOr(v.Protocol, "")
	g.currentStateTimestamp = v.CurrentStateTimestamp
	if len(v.Members) > 0 {
		g.state = stateStable
	}
	for _, mm := range v.Members {
		rebalance := mm.RebalanceTimeoutMillis
		if rebalance == -1 {
			rebalance = mm.SessionTimeoutMillis
		}
		m := &classicMember{
			memberID: mm.MemberID, instanceID: mm.InstanceID, clientID: mm.ClientID, clientHost: mm.ClientHost,
			rebalanceTimeoutMs: rebalance, sessionTimeoutMs: mm.SessionTimeoutMillis, protocolType: v.ProtocolType,
			protocols: []protocol{{name: g.protocolName, metadata: mm.Subscription}}, assignment: mm.Assignment,
		}
		g.add(m, nil)
	}
	// The leader is the one recorded, not the first member added.
	g.leaderID = strOr(v.Leader, "")
	g.subscribedTopics = g.computeSubscribedTopics()
	s.removeGroup(groupID)
	s.groups[groupID] = g
	return nil
}
