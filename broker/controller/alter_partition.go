package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// AlterPartition (KIP-497; topic ids KIP-841; broker epochs in the ISR
// KIP-903) is how a partition's leader shrinks and expands its ISR, as
// Kafka's ReplicationControlManager.alterPartition: the requesting broker
// must be registered at the broker epoch it names (else the whole request
// is STALE_BROKER_EPOCH); then each partition is checked on its own, in
// Kafka's order:
//
//   - unknown topic: UNKNOWN_TOPIC_ID (v2+) or UNKNOWN_TOPIC_OR_PARTITION;
//     unknown partition: UNKNOWN_TOPIC_OR_PARTITION;
//   - a leader or partition epoch above the controller's: NOT_CONTROLLER
//     (the leader has seen a newer controller);
//   - a lower leader epoch: FENCED_LEADER_EPOCH;
//   - a requester that is not the leader: INVALID_REQUEST (Kafka's answer;
//     the leader epoch matched, so this is a confused broker);
//   - a lower partition epoch: INVALID_UPDATE_VERSION;
//   - an ISR with a broker that is not a replica, a duplicate, or without
//     the leader; RECOVERING with more than one member; or a change from
//     RECOVERED to RECOVERING: INVALID_REQUEST;
//   - an ISR member not registered, fenced, in controlled shutdown or
//     (v3) of another broker epoch than given (-1 skips the check):
//     INELIGIBLE_REPLICA (v2+) or OPERATION_NOT_ATTEMPTED.
//
// An accepted change is one PartitionChangeRecord: the partition epoch
// goes up by one and the leader epoch stays (the leader does not change).
// An ISR equal to the current one (and the same recovery state) writes
// nothing. Either way the partition's state after the request is
// answered: leader, leader epoch, ISR, partition epoch, recovery state.
func (c *QuorumController) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	resp, _, err := write(ctx, c, "alterPartition", func(im *metadata.Image) (writeResult[*kmsg.AlterPartitionResponse], error) {
		return c.alterPartition(im, req)
	})
	return resp, err
}

func (c *QuorumController) alterPartition(im *metadata.Image, req *kmsg.AlterPartitionRequest) (writeResult[*kmsg.AlterPartitionResponse], error) {
	var none writeResult[*kmsg.AlterPartitionResponse]
	b := im.Brokers[req.BrokerID]
	if b == nil {
		return none, apierr.Errorf(kerr.StaleBrokerEpoch, "No broker registration found for broker id %d", req.BrokerID)
	}
	if b.Epoch != req.BrokerEpoch {
		return none, apierr.Errorf(kerr.StaleBrokerEpoch, "Expected broker epoch %d, but got broker epoch %d", b.Epoch, req.BrokerEpoch)
	}
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	var recs []metadata.Record
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID
		var t *metadata.Topic
		if req.Version > 1 {
			t, _ = im.TopicByID(uuid.UUID(rt.TopicID))
		} else {
			t, _ = im.Topic(rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			if t == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if req.Version > 1 {
					sp.ErrorCode = kerr.UnknownTopicID.Code
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			isr := newISR(req.Version, rp)
			p, rec, err := c.alterOnePartition(im, t, req.BrokerID, req.Version, rp, isr)
			if err != nil {
				c.log.Info("rejecting AlterPartition", "broker", req.BrokerID, "topic", t.Name, "partition", rp.Partition, "err", err)
				sp.ErrorCode = apierr.Code(err)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if rec != nil {
				recs = append(recs, rec)
				c.log.Debug("altering ISR", "broker", req.BrokerID, "topic", t.Name, "partition", rp.Partition, "isr", p.ISR, "partition_epoch", p.PartitionEpoch)
				if rec.Leader != metadata.NoLeaderChange && rec.Leader != req.BrokerID {
					// The change completed a reassignment that
					// removed the leader (Kafka's case): the
					// record stands, and the leader learns it from
					// its metadata.
					code := kerr.NewLeaderElected.Code
					if req.Version <= 1 {
						code = kerr.FencedLeaderEpoch.Code
					}
					c.log.Info("AlterPartition completed a reassignment and moved the leadership", "broker", req.BrokerID, "topic", t.Name, "partition", rp.Partition, "new_leader", rec.Leader)
					sp.ErrorCode = code
					st.Partitions = append(st.Partitions, sp)
					continue
				}
			}
			sp.LeaderID, sp.LeaderEpoch, sp.ISR = p.Leader, p.LeaderEpoch, slices.Clone(p.ISR)
			sp.LeaderRecoveryState, sp.PartitionEpoch = p.LeaderRecoveryState, p.PartitionEpoch
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return writeResult[*kmsg.AlterPartitionResponse]{records: recs, resp: resp}, nil
}

// isrMember is one proposed ISR member; epoch -1: not checked.
type isrMember struct {
	id    int32
	epoch int64
}

// newISR reads a partition's proposed ISR: NewEpochISR from v3, NewISR
// (epochs unchecked) before.
func newISR(version int16, rp kmsg.AlterPartitionRequestTopicPartition) []isrMember {
	var out []isrMember
	if version >= 3 {
		for _, m := range rp.NewEpochISR {
			out = append(out, isrMember{m.BrokerID, m.BrokerEpoch})
		}
		return out
	}
	for _, id := range rp.NewISR {
		out = append(out, isrMember{id, -1})
	}
	return out
}

// alterOnePartition checks one partition's change and returns the
// partition as it will be, with the record that makes it so (nil when the
// ISR does not change).
func (c *QuorumController) alterOnePartition(im *metadata.Image, t *metadata.Topic, broker int32, version int16,
	rp kmsg.AlterPartitionRequestTopicPartition, isr []isrMember) (metadata.Partition, *metadata.PartitionChangeRecord, error) {
	if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		return metadata.Partition{}, nil, apierr.Errorf(kerr.UnknownTopicOrPartition, "unknown partition %s-%d", t.Name, rp.Partition)
	}
	p := t.Partitions[rp.Partition]
	if err := validateAlterPartition(im, p, broker, version, rp, isr); err != nil {
		return p, nil, err
	}
	ids := make([]int32, len(isr))
	for i, m := range isr {
		ids[i] = m.id
	}
	b := c.newChange(im, t, p, func(r int32) bool { return isActive(im, r) })
	b.targetISR, b.targetLRS = ids, rp.LeaderRecoveryState
	rec, _ := b.build()
	if rec == nil {
		return p, nil, nil
	}
	return p.Merge(rec), rec, nil
}

// validateAlterPartition is Kafka's validateAlterPartitionData.
func validateAlterPartition(im *metadata.Image, p metadata.Partition, broker int32, version int16,
	rp kmsg.AlterPartitionRequestTopicPartition, isr []isrMember) error {
	switch {
	case rp.LeaderEpoch > p.LeaderEpoch:
		return apierr.Errorf(kerr.NotController, "leader epoch %d is newer than the controller's %d", rp.LeaderEpoch, p.LeaderEpoch)
	case rp.PartitionEpoch > p.PartitionEpoch:
		return apierr.Errorf(kerr.NotController, "partition epoch %d is newer than the controller's %d", rp.PartitionEpoch, p.PartitionEpoch)
	case rp.LeaderEpoch < p.LeaderEpoch:
		return apierr.Errorf(kerr.FencedLeaderEpoch, "leader epoch %d, the current one is %d", rp.LeaderEpoch, p.LeaderEpoch)
	case broker != p.Leader:
		return apierr.Errorf(kerr.InvalidRequest, "broker %d is not the leader; %d is", broker, p.Leader)
	case rp.PartitionEpoch < p.PartitionEpoch:
		return apierr.Errorf(kerr.InvalidUpdateVersion, "partition epoch %d, the current one is %d", rp.PartitionEpoch, p.PartitionEpoch)
	}
	seen := map[int32]bool{}
	for _, m := range isr {
		if seen[m.id] || !slices.Contains(p.Replicas, m.id) {
			return apierr.Errorf(kerr.InvalidRequest, "invalid ISR: broker %d is not a replica or is named twice", m.id)
		}
		seen[m.id] = true
	}
	if !seen[p.Leader] {
		return apierr.Errorf(kerr.InvalidRequest, "invalid ISR: it lacks the leader %d", p.Leader)
	}
	if rp.LeaderRecoveryState == leaderRecovering && len(isr) > 1 {
		return apierr.Errorf(kerr.InvalidRequest, "an ISR of %d replicas while the leader is recovering from an unclean election", len(isr))
	}
	if rp.LeaderRecoveryState != leaderRecovered && rp.LeaderRecoveryState != leaderRecovering {
		return apierr.Errorf(kerr.InvalidRequest, "unknown leader recovery state %d", rp.LeaderRecoveryState)
	}
	if p.LeaderRecoveryState == leaderRecovered && rp.LeaderRecoveryState == leaderRecovering {
		return apierr.Errorf(kerr.InvalidRequest, "the leader recovery state cannot change from RECOVERED to RECOVERING")
	}
	for _, m := range isr {
		why := ""
		switch b := im.Brokers[m.id]; {
		case b == nil:
			why = "not registered"
		case b.InControlledShutdown:
			why = "shutting down"
		case b.Fenced:
			why = "fenced"
		case m.epoch != -1 && m.epoch != b.Epoch:
			why = fmt.Sprintf("broker epoch mismatch: requested=%d VS expected=%d", m.epoch, b.Epoch)
		case !b.HasOnlineDir(p.Directory(m.id)):
			why = "its log dir is offline"
		}
		if why == "" {
			continue
		}
		code := kerr.IneligibleReplica
		if version <= 1 {
			code = kerr.OperationNotAttempted
		}
		return apierr.Errorf(code, "ineligible replica %d in the new ISR: %s", m.id, why)
	}
	return nil
}
