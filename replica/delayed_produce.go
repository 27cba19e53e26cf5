package replica

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/purgatory"
)

// produceStatus is one partition of a DelayedProduce (Kafka's
// ProducePartitionStatus): the offset the high watermark must reach, and
// whether the partition still waits.
type produceStatus struct {
	tp             TopicPartition
	requiredOffset int64 // last appended offset + 1
	acksPending    bool
	err            error
}

// check reports whether the partition is done waiting, and if so ends its
// wait with checkEnoughReplicasReachOffset's error: an append is answered
// by this, whether it waited or not.
func (s *produceStatus) check(m *Manager) bool {
	done, err := m.checkEnoughReplicasReachOffset(s.tp, s.requiredOffset)
	if done {
		s.acksPending, s.err = false, err
	}
	return done
}

// DelayedProduce is an acks=all produce waiting until the high watermark
// of every partition it appended to passes its last appended offset, or
// until the request's timeout (Kafka's DelayedProduce). A partition that
// is deleted meanwhile answers UNKNOWN_TOPIC_OR_PARTITION; one still
// waiting at shutdown answers NOT_LEADER_OR_FOLLOWER (the client retries
// elsewhere, as after Kafka's controlled shutdown); one still waiting at
// the timeout answers REQUEST_TIMED_OUT.
type DelayedProduce struct {
	purgatory.Operation
	mu     sync.Mutex // the operation's lock: guards status
	m      *Manager
	status []produceStatus
	done   func([]produceStatus)
}

func newDelayedProduce(m *Manager, timeout time.Duration, status []produceStatus, done func([]produceStatus)) *DelayedProduce {
	d := &DelayedProduce{m: m, status: status, done: done}
	d.InitWithLock(d, timeout, &d.mu)
	return d
}

// TryComplete checks the partitions still pending and completes when none
// is left. It runs under the operation's lock.
func (d *DelayedProduce) TryComplete() bool {
	left := 0
	for i := range d.status {
		s := &d.status[i]
		if s.acksPending && !s.check(d.m) {
			left++
		}
	}
	if left == 0 {
		return d.ForceComplete()
	}
	return false
}

// OnExpiration fails the partitions still waiting with REQUEST_TIMED_OUT.
// It runs without the operation's lock, so it takes it.
func (d *DelayedProduce) OnExpiration() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.status {
		if d.status[i].acksPending {
			d.status[i].err = kerr.RequestTimedOut
		}
	}
}

// OnComplete hands the outcome back to AppendRecords' caller.
func (d *DelayedProduce) OnComplete() { d.done(d.status) }

// checkEnoughReplicasReachOffset reports whether partition tp's high
// watermark reached required (Kafka's Partition.checkEnoughReplicasReachOffset),
// and with which error the partition is done otherwise.
func (m *Manager) checkEnoughReplicasReachOffset(tp TopicPartition, required int64) (bool, error) {
	p := m.Partition(tp)
	if p == nil {
		return true, kerr.UnknownTopicOrPartition
	}
	if !p.IsLeader() {
		return true, kerr.NotLeaderForPartition
	}
	if p.Log.HighWatermark() >= required {
		// Kafka's rule: acknowledged only while the ISR still meets
		// min.insync.replicas; a write that waited while it shrank
		// below is NOT_ENOUGH_REPLICAS_AFTER_APPEND (retried).
		p.mu.RLock()
		n, minISR := len(p.isr), p.effectiveMinISRLocked()
		p.mu.RUnlock()
		if n < minISR {
			return true, kerr.NotEnoughReplicasAfterAppend
		}
		return true, nil
	}
	if m.shuttingDown.Load() {
		return true, kerr.NotLeaderForPartition
	}
	return false, nil
}
