package replica

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// Partition is one partition hosted by this broker (Kafka's Partition).
// Its leader epoch and leadership change only through the metadata
// publisher (applyDelta); produce and fetch read them without locks.
//
// As leader it keeps the followers' fetch state (Kafka's Replica), moves
// the high watermark to the least log end offset of the ISR, and proposes
// ISR changes to the controller (AlterPartition); the ISR it acts on is
// the one the controller committed, plus, while a proposal is in flight,
// what the proposal adds (Kafka's maximal ISR), so the high watermark
// never moves past what either ISR has. As follower it is fed by a
// ReplicaFetcherThread.
type Partition struct {
	TopicPartition
	TopicID uuid.UUID
	Log     *log.Log

	// leaderEpoch is the partition's leader epoch; isLeader whether this
	// broker leads it at that epoch (a replica here whose leader is
	// elsewhere, or none, serves no produce and no consumer fetch).
	leaderEpoch atomic.Int32
	isLeader    atomic.Bool

	stats *topicStats
	// leaderThrottled and followerThrottled: the topic's
	// leader/follower.replication.throttled.replicas name this replica
	// (replication_quota.go).
	leaderThrottled, followerThrottled atomic.Bool
	// followerLag is, while this broker follows the partition, how far
	// its log end is behind the leader's high watermark at the last
	// fetch (-1: not following, or not fetched yet).
	followerLag atomic.Int64

	// mu guards the replication state below (Kafka's
	// leaderIsrUpdateLock): appends as leader hold it for reading, so a
	// leadership change waits for them; state changes hold it for
	// writing. Lock order: mu before the log's locks; never held while
	// completing delayed operations.
	mu             sync.RWMutex
	replicas       []int32 // the assignment, preferred leader first
	isr            []int32 // committed by the controller
	partitionEpoch int32
	// pending is the ISR of an AlterPartition in flight (nil: none);
	// pendingEpoch the partition epoch it was proposed against.
	pending      []int32
	pendingEpoch int32
	// proposeAfter: a refused proposal is not made again before it.
	proposeAfter time.Time
	// remotes are the followers' states while this broker leads.
	remotes map[int32]*remoteReplica
	// epochStart is the log end offset when this broker became leader
	// at its epoch: a follower joins the ISR only once it has that much.
	epochStart int64
}

// remoteReplica is a follower as its leader sees it (Kafka's Replica).
type remoteReplica struct {
	leo              int64 // -1 until it has fetched
	logStart         int64
	brokerEpoch      int64
	lastFetch        time.Time
	lastCaughtUp     time.Time
	lastFetchLeaderE int64 // the leader's log end at its previous fetch
}

// LeaderEpoch is the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool { return p.isLeader.Load() }

// maximalISRLocked is the ISR the high watermark waits for: the committed
// one, and what an expansion in flight adds (an in-flight shrink still
// waits for the members it would drop). mu held.
func (p *Partition) maximalISRLocked() []int32 {
	if p.pending == nil {
		return p.isr
	}
	out := slices.Clone(p.isr)
	for _, r := range p.pending {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// makeLeader takes the metadata's state as leader at epoch; reset tells
// that the epoch is new (the followers' states start over, as Kafka's
// makeLeader resets them). mu held for writing.
func (p *Partition) makeLeaderLocked(self int32, replicas, isr []int32, partitionEpoch int32, reset bool, now time.Time) {
	p.applyAssignmentLocked(replicas, isr, partitionEpoch)
	if reset || p.remotes == nil {
		p.remotes = make(map[int32]*remoteReplica, len(replicas))
		p.epochStart = p.Log.LogEndOffset()
	}
	for _, r := range replicas {
		if r == self {
			continue
		}
		if p.remotes[r] == nil {
			// As Kafka's resetReplicaState: a member of the ISR counts as
			// caught up when this broker became leader, so it has
			// replica.lag.time.max.ms to fetch before it is dropped.
			rr := &remoteReplica{leo: -1, logStart: -1, lastFetchLeaderE: -1}
			if slices.Contains(isr, r) {
				rr.lastCaughtUp = now
			}
			p.remotes[r] = rr
		}
	}
	for r := range p.remotes {
		if !slices.Contains(replicas, r) {
			delete(p.remotes, r)
		}
	}
}

// makeFollowerLocked takes the metadata's state as a follower. mu held for
// writing.
func (p *Partition) makeFollowerLocked(replicas, isr []int32, partitionEpoch int32) {
	p.applyAssignmentLocked(replicas, isr, partitionEpoch)
	p.remotes = nil
	p.pending = nil
}

// applyAssignmentLocked records what the metadata says; an ISR change the
// controller committed ends the proposal in flight (whatever it was: the
// leader proposes again from the new state if it still needs to).
func (p *Partition) applyAssignmentLocked(replicas, isr []int32, partitionEpoch int32) {
	p.replicas = slices.Clone(replicas)
	if partitionEpoch >= p.partitionEpoch || p.isr == nil {
		p.isr, p.partitionEpoch = slices.Clone(isr), partitionEpoch
	}
	if p.pending != nil && p.partitionEpoch > p.pendingEpoch {
		p.pending = nil
	}
}

// effectiveMinISRLocked is Kafka's effectiveMinIsr: min.insync.replicas,
// at most the number of replicas. mu held.
func (p *Partition) effectiveMinISRLocked() int {
	return min(int(p.Log.MinInSyncReplicas()), max(len(p.replicas), 1))
}

// leaderHighWatermarkLocked is the high watermark the followers' states
// allow (Kafka's maybeIncrementLeaderHW): the least log end offset over the
// maximal ISR and over followers that are caught up and would join it
// (eligible). While the committed ISR is smaller than min.insync.replicas
// it does not move (-1): what is above it then is not committed, so that
// the replicas that left the ISR meanwhile hold every committed record
// and may lead (KIP-966's eligible leader replicas). mu held.
func (p *Partition) leaderHighWatermarkLocked(now time.Time, lagMax time.Duration, eligible func(int32) bool) int64 {
	if len(p.isr) < p.effectiveMinISRLocked() {
		return -1
	}
	leo := p.Log.LogEndOffset()
	hw := leo
	maximal := p.maximalISRLocked()
	for id, r := range p.remotes {
		if r.leo >= hw {
			continue
		}
		if slices.Contains(maximal, id) || r.caughtUp(leo, now, lagMax) && eligible(id) {
			hw = max(r.leo, 0)
		}
	}
	return hw
}

// caughtUp is Kafka's Replica.isCaughtUp: at the leader's log end, or last
// caught up within lagMax.
func (r *remoteReplica) caughtUp(leaderLEO int64, now time.Time, lagMax time.Duration) bool {
	return r.leo == leaderLEO || now.Sub(r.lastCaughtUp) <= lagMax
}

// updateFetchState records a follower's fetch at fetchOffset (its log end)
// when the leader's log end was leaderLEO (Kafka's
// Replica.updateFetchStateOrThrow).
func (r *remoteReplica) updateFetchState(fetchOffset, logStart, leaderLEO, brokerEpoch int64, now time.Time) {
	switch {
	case fetchOffset >= leaderLEO:
		r.lastCaughtUp = maxTime(r.lastCaughtUp, now)
	case fetchOffset >= r.lastFetchLeaderE:
		r.lastCaughtUp = maxTime(r.lastCaughtUp, r.lastFetch)
	}
	r.leo, r.logStart, r.brokerEpoch = fetchOffset, logStart, brokerEpoch
	r.lastFetchLeaderE, r.lastFetch = leaderLEO, now
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// isrExpansionLocked returns the ISR to propose with follower id added, or
// nil: it is not in the ISR, nothing is in flight, it is eligible, and it
// is in sync (Kafka's isFollowerInSync: its log end has reached the high
// watermark and the start of this leader's epoch). mu held.
func (p *Partition) isrExpansionLocked(id int32, eligible bool, now time.Time) []int32 {
	r := p.remotes[id]
	if r == nil || p.pending != nil || slices.Contains(p.isr, id) || !eligible || now.Before(p.proposeAfter) {
		return nil
	}
	if r.leo < p.Log.HighWatermark() || r.leo < p.epochStart {
		return nil
	}
	return append(slices.Clone(p.isr), id)
}

// isrShrinkLocked returns the ISR to propose without the followers that
// are out of sync (not caught up within lagMax, Kafka's
// getOutOfSyncReplicas), or nil when none is or a proposal is in flight.
// mu held.
func (p *Partition) isrShrinkLocked(self int32, now time.Time, lagMax time.Duration) []int32 {
	if p.pending != nil || now.Before(p.proposeAfter) {
		return nil
	}
	leo := p.Log.LogEndOffset()
	var keep []int32
	shrink := false
	for _, id := range p.isr {
		if id != self {
			if r := p.remotes[id]; r == nil || !r.caughtUp(leo, now, lagMax) {
				shrink = true
				continue
			}
		}
		keep = append(keep, id)
	}
	if !shrink {
		return nil
	}
	return keep
}
