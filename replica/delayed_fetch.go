package replica

import (
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/purgatory"
)

// DelayedFetch is a fetch waiting for fetch.min.bytes to become readable
// or for fetch.max.wait.ms to pass (Kafka's DelayedFetch). It records,
// per partition, where its fetch offset is in the log (the offset
// metadata of the first read) and the partition it read; TryComplete
// compares that with the partition's high watermark (the last stable
// offset for read_committed, the log end for a follower) as it is when
// TryComplete runs, so no append can be missed whatever the timing: an
// append moves the high watermark and then calls CheckAndComplete, which
// either finds this operation watched or came before its second try.
type DelayedFetch struct {
	purgatory.Operation
	m      *Manager
	params FetchParams
	parts  []FetchPartition
	// start[i] is where parts[i]'s fetch offset was when it was read;
	// UnknownOffsetMetadata for a partition that had nothing to track.
	start []log.LogOffsetMetadata
	// seen[i] is the partition object read (nil if none): another one
	// now means the topic was deleted or re-created.
	seen []*Partition
	done func([]FetchResult)
}

func newDelayedFetch(m *Manager, params FetchParams, parts []FetchPartition, start []log.LogOffsetMetadata, seen []*Partition, done func([]FetchResult)) *DelayedFetch {
	d := &DelayedFetch{m: m, params: params, parts: parts, start: start, seen: seen, done: done}
	d.Init(d, params.MaxWait)
	return d
}

// TryComplete completes the fetch when (Kafka's cases):
//
//	A-C: a partition is no longer here (deleted, re-created);
//	D:   reading its offsets failed (storage error);
//	E:   the requested leader epoch is now fenced or unknown;
//	F:   the fetch offset is past the end offset (truncation), or on an
//	     older segment than the end offset (the log rolled, or the fetch
//	     is behind);
//	G:   the bytes between the fetch offsets and the end offsets, each
//	     capped by its partition's max bytes, reach fetch.min.bytes (a
//	     follower's partitions held back by the leader's replication
//	     throttle do not count, as Kafka's);
//	or the broker is shutting down (answer with what there is).
func (d *DelayedFetch) TryComplete() bool {
	if d.m.shuttingDown.Load() {
		return d.ForceComplete()
	}
	var accumulated int64
	for i, fp := range d.parts {
		start := d.start[i]
		if start.MessageOffsetOnly() {
			continue
		}
		p := d.m.Partition(fp.TopicPartition)
		if p == nil || p != d.seen[i] {
			return d.ForceComplete() // A-C
		}
		if checkLeaderEpoch(p, fp.CurrentLeaderEpoch) != nil {
			return d.ForceComplete() // E
		}
		if p.Log.Offline() != nil {
			return d.ForceComplete() // D: its log dir failed
		}
		snap, err := p.Log.FetchOffsetSnapshot()
		if err != nil {
			return d.ForceComplete() // D
		}
		end := snap.HighWatermark
		switch {
		case d.params.ReplicaID >= 0 && d.m.leaderThrottledReplica(p, d.params.ReplicaID) && d.m.leaderQuota.Exceeded():
			// Kafka's shouldLeaderThrottle: what a throttled
			// follower may not have yet does not count.
			continue
		case d.params.ReplicaID >= 0:
			end = snap.LogEndOffset
		case d.params.ReadCommitted:
			end = snap.LastStableOffset
		}
		switch {
		case start.MessageOffset > end.MessageOffset:
			return d.ForceComplete() // F: truncated below the fetch offset
		case start.MessageOffset < end.MessageOffset:
			if start.OnOlderSegment(end) {
				return d.ForceComplete() // F: rolled, or behind
			}
			if start.OnSameSegment(end) {
				accumulated += min(end.PositionDiff(start), int64(max(fp.MaxBytes, 0)))
			}
		}
	}
	if accumulated >= int64(d.params.MinBytes) {
		return d.ForceComplete() // G
	}
	return false
}

// OnExpiration does nothing: an expired fetch answers with what it has.
func (d *DelayedFetch) OnExpiration() {}

// OnComplete reads every partition again and responds.
func (d *DelayedFetch) OnComplete() {
	results, _, _, _ := d.m.readFromLocalLog(d.params, d.parts)
	if moved := d.m.takeMoved(results); len(moved) > 0 {
		// Not from inside an operation of the fetch purgatory.
		d.m.bg.Go(func(<-chan struct{}) { d.m.completeDelayed(moved) })
	}
	d.done(results)
}
