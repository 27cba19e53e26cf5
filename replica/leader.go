package replica

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/routine"
)

// The leader side of replication (Kafka's Partition as leader): followers'
// fetches move their states and with them the high watermark and the ISR;
// ISR changes are proposed to the controller with AlterPartition and take
// effect when the controller has committed them.

// isrEligible reports whether a broker may be in an ISR (KIP-841): it is
// registered, unfenced and not shutting down.
func (m *Manager) isrEligible(id int32) bool {
	if m.cfg.Image == nil {
		return false
	}
	b := m.cfg.Image().Brokers[id]
	return b != nil && !b.Fenced && !b.InControlledShutdown
}

// checkFollowerFetch refuses a fetch from a replica the partition does not
// have, or from an incarnation whose broker epoch is not the registered one
// (KIP-903, a process of an older incarnation): neither may move the
// partition's state.
func (m *Manager) checkFollowerFetch(p *Partition, id int32, brokerEpoch int64) error {
	p.mu.RLock()
	_, ok := p.remotes[id]
	p.mu.RUnlock()
	if !ok {
		return apierr.Errorf(kerr.NotLeaderForPartition, "Leader %d failed to record follower %d's position for %s: it is not a replica of the partition.", m.cfg.NodeID, id, p.TopicPartition)
	}
	if brokerEpoch >= 0 && m.cfg.Image != nil {
		if b := m.cfg.Image().Brokers[id]; b == nil || b.Epoch != brokerEpoch {
			return apierr.Errorf(kerr.NotLeaderForPartition, "Leader %d refuses follower %d's fetch of %s: broker epoch %d is not the registered one.", m.cfg.NodeID, id, p.TopicPartition, brokerEpoch)
		}
	}
	return nil
}

// updateFollowerFetchState records a follower's fetch (Kafka's
// Partition.updateFollowerFetchState): its log end is fetchOffset, the
// leader's was leaderLEO when it was read. The follower may join the ISR
// (a proposal goes to the controller) and the high watermark may move; it
// reports whether it did. The caller completes delayed operations.
func (m *Manager) updateFollowerFetchState(p *Partition, id int32, brokerEpoch, fetchOffset, logStart, leaderLEO int64) bool {
	now := time.Now()
	p.mu.Lock()
	r := p.remotes[id]
	if r == nil || !p.IsLeader() {
		p.mu.Unlock()
		return false
	}
	r.updateFetchState(fetchOffset, logStart, leaderLEO, brokerEpoch, now)
	var proposal []int32
	if m.cfg.AlterPartition != nil {
		if proposal = p.isrExpansionLocked(id, m.isrEligible(id), now); proposal != nil {
			p.pending, p.pendingEpoch = proposal, p.partitionEpoch
		}
	}
	moved := m.maybeIncrementHighWatermarkLocked(p, now)
	epoch, pepoch := p.LeaderEpoch(), p.partitionEpoch
	p.mu.Unlock()
	if proposal != nil {
		m.log.Info("expanding ISR", "partition", p.TopicPartition.String(), "isr", proposal, "follower", id)
		m.sendAlterPartition(p, proposal, epoch, pepoch)
	}
	return moved
}

// maybeIncrementHighWatermarkLocked moves the leader's high watermark to
// what the followers allow, never back; it reports whether it moved.
// p.mu held.
func (m *Manager) maybeIncrementHighWatermarkLocked(p *Partition, now time.Time) bool {
	hw := p.leaderHighWatermarkLocked(now, m.cfg.Replication.LagTimeMax, m.isrEligible)
	if hw <= p.Log.HighWatermark() {
		return false
	}
	p.Log.UpdateHighWatermark(hw)
	return true
}

// maybeIncrementHighWatermark is maybeIncrementHighWatermarkLocked taking
// the lock.
func (m *Manager) maybeIncrementHighWatermark(p *Partition) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.IsLeader() {
		return false
	}
	return m.maybeIncrementHighWatermarkLocked(p, time.Now())
}

// completeDelayed tries the delayed produces and fetches of partitions
// whose high watermark moved. Never under a partition lock.
func (m *Manager) completeDelayed(tps []TopicPartition) {
	for _, tp := range tps {
		m.produceP.CheckAndComplete(tp)
		m.fetchP.CheckAndComplete(tp)
	}
}

// maybeShrinkISRs drops from the ISR of every partition led here the
// followers that have not caught up within replica.lag.time.max.ms
// (Kafka's ReplicaManager.maybeShrinkIsr, every half of it).
func (m *Manager) maybeShrinkISRs() {
	now := time.Now()
	var moved []TopicPartition
	m.partitions.Range(func(_, v any) bool {
		p := v.(*Partition)
		if !p.IsLeader() {
			return true
		}
		p.mu.Lock()
		proposal := p.isrShrinkLocked(m.cfg.NodeID, now, m.cfg.Replication.LagTimeMax)
		if proposal != nil {
			p.pending, p.pendingEpoch = proposal, p.partitionEpoch
		}
		epoch, pepoch, isr := p.LeaderEpoch(), p.partitionEpoch, slices.Clone(p.isr)
		if m.maybeIncrementHighWatermarkLocked(p, now) {
			moved = append(moved, p.TopicPartition)
		}
		p.mu.Unlock()
		if proposal != nil {
			m.log.Info("shrinking ISR: followers out of sync", "partition", p.TopicPartition.String(), "isr", isr, "new_isr", proposal,
				"lag_time_max_ms", m.cfg.Replication.LagTimeMax.Milliseconds())
			m.sendAlterPartition(p, proposal, epoch, pepoch)
		}
		return true
	})
	m.completeDelayed(moved)
}

// sendAlterPartition proposes isr to the controller (Kafka's
// AlterPartitionManager, one request per change). The answer, or the
// metadata that follows it, ends the proposal; a refusal ends it too, and
// the leader proposes again if it still needs to.
func (m *Manager) sendAlterPartition(p *Partition, isr []int32, leaderEpoch, partitionEpoch int32) {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	req.BrokerID = m.cfg.NodeID
	if m.cfg.BrokerEpoch != nil {
		req.BrokerEpoch = m.cfg.BrokerEpoch()
	}
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = p.TopicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p.Partition, leaderEpoch, partitionEpoch
	im := m.cfg.Image()
	for _, id := range isr {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = id, -1
		if b := im.Brokers[id]; b != nil {
			e.BrokerEpoch = b.Epoch
		}
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	m.bg.Go(func(done <-chan struct{}) {
		stop, cancelStop := routine.Context(done)
		defer cancelStop()
		ctx, cancel := context.WithTimeout(stop, m.cfg.Replication.SocketTimeout)
		defer cancel()
		resp, err := m.cfg.AlterPartition(ctx, req)
		m.alterPartitionDone(p, isr, partitionEpoch, resp, err)
	})
}

// alterPartitionRetryBackoff is how long a leader waits after a refused
// ISR change before it proposes one again.
const alterPartitionRetryBackoff = 500 * time.Millisecond

// alterPartitionDone applies the controller's answer: an accepted change is
// the partition's committed state at once (the metadata brings the same
// record), a refused one ends the proposal.
func (m *Manager) alterPartitionDone(p *Partition, isr []int32, proposedAt int32, resp *kmsg.AlterPartitionResponse, err error) {
	var part *kmsg.AlterPartitionResponseTopicPartition
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err == nil {
		if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			part = &resp.Topics[0].Partitions[0]
			err = kerr.ErrorForCode(part.ErrorCode)
		} else {
			err = kerr.UnknownServerError
		}
	}
	p.mu.Lock()
	mine := p.pending != nil && p.pendingEpoch == proposedAt && slices.Equal(p.pending, isr)
	if mine {
		p.pending = nil
		if err != nil {
			p.proposeAfter = time.Now().Add(alterPartitionRetryBackoff)
		}
	}
	if err == nil && part.LeaderEpoch == p.LeaderEpoch() && part.PartitionEpoch > p.partitionEpoch {
		switch {
		case len(part.ISR) < len(p.isr):
			m.repl.isrShrinks.Inc()
		case len(part.ISR) > len(p.isr):
			m.repl.isrExpands.Inc()
		}
		p.isr, p.partitionEpoch = slices.Clone(part.ISR), part.PartitionEpoch
		if p.IsLeader() {
			m.maybeIncrementHighWatermarkLocked(p, time.Now())
		}
	}
	p.mu.Unlock()
	if err != nil {
		m.log.Info("ISR change refused; the leader will propose again if it still needs to", "partition", p.TopicPartition.String(), "isr", isr, "err", err)
	}
	// The ISR changed (or may be proposed again): acks=all produces
	// check min.insync.replicas against it.
	m.completeDelayed([]TopicPartition{p.TopicPartition})
}
