package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
)

// Partition reassignment (KIP-455), as Kafka's ReplicationControlManager
// and PartitionReassignmentReplicas do it:
//
//  1. AlterPartitionReassignments with target replicas writes a
//     PartitionChangeRecord whose replicas are the target followed by the
//     replicas it removes, with AddingReplicas and RemovingReplicas set.
//     The brokers added start following the leader; nothing else moves.
//  2. When the ISR holds every target replica (AlterPartition from the
//     leader, as the new followers catch up), the change that records it
//     also completes the reassignment: replicas become the target, the
//     removed replicas leave the ISR, both lists are cleared, and a leader
//     that was removed is replaced (the leader epoch moves whenever a
//     replica leaves). The brokers removed stop and delete their replica.
//  3. Cancelling (null replicas) reverts to the original replicas: those
//     added leave the replicas and the ISR; if only they were in the ISR,
//     the revert needs unclean leader election.
//
// A target that rearranges the current replicas only completes at once.

// completeReassignment is Kafka's completeReassignmentIfNeeded: with the
// target ISR holding every replica the reassignment keeps, the target
// replicas and ISR lose the removed ones and the lists are cleared.
func (b *partitionChange) completeReassignment() {
	if len(b.targetAdding) == 0 && len(b.targetRemoving) == 0 {
		return
	}
	isr, replicas := b.targetISR, b.targetReplicas
	if len(b.targetRemoving) > 0 {
		removed := func(r int32) bool { return slices.Contains(b.targetRemoving, r) }
		isr = slices.DeleteFunc(slices.Clone(isr), removed)
		replicas = slices.DeleteFunc(slices.Clone(replicas), removed)
		if len(isr) == 0 || len(replicas) == 0 {
			return
		}
	}
	if !containsAll(isr, replicas) {
		return
	}
	b.targetISR, b.targetReplicas = isr, replicas
	b.targetAdding, b.targetRemoving = nil, nil
}

// AlterPartitionReassignments starts or cancels reassignments (Kafka's
// alterPartitionReassignments): each partition is answered on its own, and
// all the changes are written in one batch. From v1, a request that does
// not allow replication factor changes refuses a target of another size
// (KIP-860).
func (c *QuorumController) AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error) {
	resp, _, err := write(ctx, c, "alterPartitionReassignments", func(im *metadata.Image) (writeResult[*kmsg.AlterPartitionAssignmentsResponse], error) {
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		var recs []metadata.Record
		ok, total := 0, 0
		for _, rt := range req.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition = rp.Partition
				rec, err := c.alterPartitionReassignment(im, rt.Topic, rp, req.Version < 1 || req.AllowReplicationFactorChange)
				total++
				if err != nil {
					c.log.Info("unable to alter a partition reassignment", "topic", rt.Topic, "partition", rp.Partition, "err", err)
					sp.ErrorCode = apierr.Code(err)
					msg := err.Error()
					sp.ErrorMessage = &msg
				} else {
					ok++
					if rec != nil {
						recs = append(recs, rec)
					}
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
		c.log.Info("altered partition reassignments", "succeeded", ok, "of", total, "records", len(recs))
		return writeResult[*kmsg.AlterPartitionAssignmentsResponse]{records: recs, resp: resp}, nil
	})
	return resp, err
}

// alterPartitionReassignment is Kafka's alterPartitionReassignment for one
// partition: the record that starts, changes or cancels its reassignment,
// nil when nothing changes.
func (c *QuorumController) alterPartitionReassignment(im *metadata.Image, topic string, rp kmsg.AlterPartitionAssignmentsRequestTopicPartition, allowRFChange bool) (*metadata.PartitionChangeRecord, error) {
	t, ok := im.Topic(topic)
	if !ok {
		return nil, apierr.Errorf(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", topic)
	}
	if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		return nil, apierr.Errorf(kerr.UnknownTopicOrPartition, "Unable to find partition %s:%d.", topic, rp.Partition)
	}
	p := t.Partitions[rp.Partition]
	acceptable := func(r int32) bool { return isActive(im, r) }
	if rp.Replicas == nil {
		return c.cancelReassignment(im, t, p, acceptable)
	}
	if err := validateManualAssignment(im, rp.Replicas); err != nil {
		return nil, err
	}
	if original := len(p.Replicas) - len(p.AddingReplicas); !allowRFChange && len(rp.Replicas) != original {
		// KIP-860 (v1): the caller asked to keep the replication factor.
		return nil, apierr.Errorf(kerr.InvalidReplicationFactor, "The replication factor is changed from %d to %d", original, len(rp.Replicas))
	}
	b := c.newChange(im, t, p, acceptable)
	current := p.Replicas
	removing := sortedDifference(current, rp.Replicas)
	adding := sortedDifference(rp.Replicas, current)
	b.targetReplicas = append(slices.Clone(rp.Replicas), removing...)
	b.targetRemoving, b.targetAdding = removing, adding
	return c.buildChange(t, b), nil
}

// cancelReassignment is Kafka's cancelPartitionReassignment with
// PartitionReassignmentRevert.
func (c *QuorumController) cancelReassignment(im *metadata.Image, t *metadata.Topic, p metadata.Partition, acceptable func(int32) bool) (*metadata.PartitionChangeRecord, error) {
	if !p.Reassigning() {
		return nil, apierr.New(kerr.NoReassignmentInProgress, "No partition reassignment is in progress for the topic partition.")
	}
	added := func(r int32) bool { return slices.Contains(p.AddingReplicas, r) }
	replicas := slices.DeleteFunc(slices.Clone(p.Replicas), added)
	isr := slices.DeleteFunc(slices.Clone(p.ISR), added)
	b := c.newChange(im, t, p, acceptable)
	if len(isr) == 0 {
		if len(replicas) == 0 {
			return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "Invalid replica assignment: addingReplicas contains all replicas.")
		}
		if !b.unclean {
			return nil, apierr.Errorf(kerr.InvalidReplicaAssignment, "Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", t.Name, p.Index)
		}
		isr = []int32{replicas[0]}
	}
	b.targetISR, b.targetReplicas = isr, replicas
	b.targetAdding, b.targetRemoving = []int32{}, []int32{}
	return c.buildChange(t, b), nil
}

// validateManualAssignment is Kafka's validateManualPartitionAssignment:
// not empty, every broker registered, none twice.
func validateManualAssignment(im *metadata.Image, replicas []int32) error {
	if len(replicas) == 0 {
		return apierr.New(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if im.Brokers[id] == nil {
			return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return apierr.Errorf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	return nil
}

// sortedDifference is the members of a not in b, ascending (Kafka's
// calculateDifference, a TreeSet).
func sortedDifference(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// ListPartitionReassignments is Kafka's listPartitionReassignments: the
// named partitions that are being reassigned (unknown topics and
// partitions are left out), or every such partition for a null list.
func (c *QuorumController) ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error) {
	return read(ctx, c, "listPartitionReassignments", func(im *metadata.Image) (*kmsg.ListPartitionReassignmentsResponse, error) {
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		add := func(t *metadata.Topic, parts []int32) {
			st := kmsg.NewListPartitionReassignmentsResponseTopic()
			st.Topic = t.Name
			for _, i := range parts {
				if i < 0 || int(i) >= len(t.Partitions) || !t.Partitions[i].Reassigning() {
					continue
				}
				p := t.Partitions[i]
				sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
				sp.Partition = i
				sp.Replicas = slices.Clone(p.Replicas)
				sp.AddingReplicas = append([]int32{}, p.AddingReplicas...)
				sp.RemovingReplicas = append([]int32{}, p.RemovingReplicas...)
				st.Partitions = append(st.Partitions, sp)
			}
			if len(st.Partitions) > 0 {
				resp.Topics = append(resp.Topics, st)
			}
		}
		if req.Topics == nil {
			for _, t := range im.Topics() {
				all := make([]int32, len(t.Partitions))
				for i := range all {
					all[i] = int32(i)
				}
				add(t, all)
			}
			return resp, nil
		}
		for _, rt := range req.Topics {
			if t, ok := im.Topic(rt.Topic); ok {
				add(t, rt.Partitions)
			}
		}
		return resp, nil
	})
}
