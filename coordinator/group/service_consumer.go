package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/coordinator/runtime"
)

// The Service's consumer protocol operations and the metadata changes the
// consumer groups react to.

// ConsumerGroupHeartbeat handles a KIP-848 heartbeat (join, heartbeat,
// leave). With the consumer protocol not in
// group.coordinator.rebalance.protocols it is UNSUPPORTED_VERSION, as
// Kafka answers.
func (s *Service) ConsumerGroupHeartbeat(rc RequestContext, req *kmsg.ConsumerGroupHeartbeatRequest, done func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	fail := func(code *kerr.Error, msg *string) {
		done(&kmsg.ConsumerGroupHeartbeatResponse{ErrorCode: code.Code, ErrorMessage: msg})
	}
	if !s.cfg.consumerProtocolEnabled() {
		msg := "The consumer group protocol is not enabled (group.coordinator.rebalance.protocols)."
		fail(kerr.UnsupportedVersion, &msg)
		return
	}
	if req.Group == "" {
		msg := "GroupId can't be empty."
		fail(kerr.InvalidRequest, &msg)
		return
	}
	runtime.Write(s.rt, "consumer-group-heartbeat", s.PartitionFor(req.Group), func(sh *Shard) (heartbeatResult, error) {
		return sh.consumerGroupHeartbeat(rc, req)
	}, func(resp *kmsg.ConsumerGroupHeartbeatResponse, err error) {
		if err != nil {
			fail(operationError(err))
			return
		}
		done(resp)
	})
}

// ConsumerGroupDescribe describes consumer groups.
func (s *Service) ConsumerGroupDescribe(rc RequestContext, ids []string, done func([]kmsg.ConsumerGroupDescribeResponseGroup)) {
	var valid []string
	for _, id := range ids {
		if id != "" {
			valid = append(valid, id)
		}
	}
	parts, order := s.byPartition(valid)
	results := map[string]kmsg.ConsumerGroupDescribeResponseGroup{}
	collect := gather(len(order), func() {
		out := make([]kmsg.ConsumerGroupDescribeResponseGroup, 0, len(ids))
		for _, id := range ids {
			if id == "" {
				d := kmsg.NewConsumerGroupDescribeResponseGroup()
				d.ErrorCode = kerr.InvalidGroupID.Code
				out = append(out, d)
				continue
			}
			out = append(out, results[id])
		}
		done(out)
	})
	for _, p := range order {
		groupIDs := parts[p]
		runtime.Read(s.rt, "consumer-group-describe", p, func(sh *Shard) ([]kmsg.ConsumerGroupDescribeResponseGroup, error) {
			return sh.consumerGroupDescribe(groupIDs), nil
		}, func(gs []kmsg.ConsumerGroupDescribeResponseGroup, err error) {
			collect(func() {
				if err != nil {
					code, _ := operationError(err)
					for _, id := range groupIDs {
						d := kmsg.NewConsumerGroupDescribeResponseGroup()
						d.Group, d.ErrorCode = id, code.Code
						results[id] = d
					}
					return
				}
				for _, g := range gs {
					results[g.Group] = g
				}
			})
		})
	}
}

// consumerGroupDescribe is GroupMetadataManager.consumerGroupDescribe.
func (s *Shard) consumerGroupDescribe(ids []string) []kmsg.ConsumerGroupDescribeResponseGroup {
	out := make([]kmsg.ConsumerGroupDescribeResponseGroup, 0, len(ids))
	names := func(id [16]byte) (string, bool) {
		t, ok := s.topics.TopicByID(id)
		return t.Name, ok
	}
	for _, id := range ids {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group = id
		g, ok := s.groups[id].(*ConsumerGroup)
		if !ok {
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			if s.groups[id] != nil {
				msg = "Group " + id + " is not a consumer group."
			}
			d.ErrorMessage = &msg
			out = append(out, d)
			continue
		}
		d.State, d.Epoch, d.AssignmentEpoch = g.state.String(), g.groupEpoch, g.assignmentEpoch
		d.AssignorName = maxCount(g.serverAssignors)
		if d.AssignorName == "" {
			d.AssignorName = s.cfg.ConsumerAssignors[0]
		}
		d.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
		for _, mid := range g.sortedMemberIDs() {
			d.Members = append(d.Members, g.members[mid].describe(g.targetAssignmentOf(mid), names))
		}
		out = append(out, d)
	}
	return out
}

// OnTopicsChanged tells the coordinator that topics were created, deleted
// or got partitions (Kafka's onNewMetadataImage): consumer groups
// subscribed to them recompute their assignment at their next heartbeat,
// and regular expressions are resolved again after creations. Offsets of
// deleted topics are dropped.
func (s *Service) OnTopicsChanged(created, changed, deleted []string) {
	v := s.versions.version.Add(1)
	if len(created) > 0 {
		s.versions.newTopicsVersion.Store(v)
	}
	all := append(append(append([]string(nil), created...), changed...), deleted...)
	runtime.WriteAll(s.rt, "on-new-metadata", func(sh *Shard) (runtime.Result[runtime.Void], error) {
		sh.onTopicsChanged(all)
		return runtime.Result[runtime.Void]{}, nil
	}, func([]runtime.PartitionResult[runtime.Void]) {})
	if len(deleted) > 0 {
		s.OnTopicsDeleted(deleted)
	}
}
