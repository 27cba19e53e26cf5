package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/log"
)

// FetchParams are a fetch request's request-wide settings.
type FetchParams struct {
	ReplicaID int32 // -1 for consumers
	// ReplicaEpoch is a follower's broker epoch (Fetch v15+
	// replica_state, KIP-903); -1 unknown.
	ReplicaEpoch int64
	MaxWait      time.Duration // fetch.max.wait.ms
	MinBytes     int32         // fetch.min.bytes
	MaxBytes     int32         // response limit (fetch.max.bytes), already capped by the broker's
	// ReadCommitted: isolation level read_committed: reads stop at the
	// last stable offset and carry the aborted transactions they overlap
	// (Kafka's FetchIsolation.TXN_COMMITTED).
	ReadCommitted bool
	// Client is a consumer's metadata (Fetch v11+; nil before, and for
	// followers): such a fetch may be served by a follower, and the
	// leader may point it to a replica in its rack (KIP-392).
	Client *ClientMetadata
}

// fetchOnlyFromLeader is Kafka's FetchParams.fetchOnlyLeader: followers
// and consumers without client metadata read from leaders only.
func (p FetchParams) fetchOnlyFromLeader() bool { return p.ReplicaID >= 0 || p.Client == nil }

// FetchPartition is one partition of a fetch.
type FetchPartition struct {
	TopicPartition
	FetchOffset        int64
	MaxBytes           int32
	CurrentLeaderEpoch int32
	// LastFetchedEpoch is the epoch of the last batch the fetcher has
	// (v12+, when HasLastFetchedEpoch): a log that diverged from the
	// leader's is told where (KIP-320). LogStartOffset is a follower's.
	LastFetchedEpoch    int32
	HasLastFetchedEpoch bool
	LogStartOffset      int64
}

// FetchResult is one partition's outcome. Records are whole batches, in a
// file slice that is sent to the socket without copying.
type FetchResult struct {
	TopicPartition
	Err              error
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Records          log.FileSlice
	// AbortedTransactions are, for a read_committed consumer fetch, the
	// aborted transactions overlapping Records (empty, not nil); nil
	// otherwise (Fetch v4+ aborted_transactions, null when not asked).
	AbortedTransactions []log.AbortedTxn
	// DivergingEpoch, when its EndOffset is not -1, tells the fetcher
	// that its log diverged from the leader's after EndOffset in Epoch
	// (KIP-320); Records is empty then.
	DivergingEpoch EpochEndOffset
	// PreferredReadReplica, when not -1, is the replica the consumer
	// should fetch this partition from (KIP-392); Records is empty then.
	PreferredReadReplica int32

	hwMoved bool // a follower's fetch moved the high watermark
	// remote: the offset is in remote storage, to be read by readRemote.
	remote *remoteRead
}

// EpochEndOffset is a leader epoch and the offset where it ends.
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// FetchMessages reads every partition and calls done with the results
// (Kafka's fetchMessages). If fewer than MinBytes are available and
// MaxWait is positive, it waits in the fetch purgatory as a DelayedFetch
// until MinBytes are readable, a partition changes (see
// DelayedFetch.TryComplete) or MaxWait passes, then reads again. During
// shutdown it never waits. done may run on another goroutine.
func (m *Manager) FetchMessages(params FetchParams, parts []FetchPartition, done func([]FetchResult)) {
	results, bytes, anyErr, start := m.readFromLocalLog(params, parts)
	if params.ReplicaID >= 0 {
		m.completeDelayed(m.takeMoved(results))
	}
	if slices.ContainsFunc(results, func(r FetchResult) bool { return r.remote != nil }) {
		m.readRemote(params, results, done)
		return
	}
	redirected := slices.ContainsFunc(results, func(r FetchResult) bool { return r.PreferredReadReplica >= 0 })
	if params.MaxWait <= 0 || len(parts) == 0 || bytes >= int64(params.MinBytes) || anyErr || redirected || m.shuttingDown.Load() {
		done(results)
		return
	}
	seen := make([]*Partition, len(parts))
	keys := make([]TopicPartition, len(parts))
	for i, fp := range parts {
		keys[i] = fp.TopicPartition
		seen[i] = m.Partition(fp.TopicPartition)
	}
	m.fetchP.TryCompleteElseWatch(newDelayedFetch(m, params, parts, start, seen, done), keys)
}

// readFromLocalLog reads each partition in order, within the response
// limit. The first partition that has data gets its first batch whole
// even when it is larger than the limits (KIP-74), so a consumer always
// makes progress. It returns the results, the bytes read, whether any
// partition failed, and where each fetch offset is in its log
// (UnknownOffsetMetadata for a partition that failed).
func (m *Manager) readFromLocalLog(params FetchParams, parts []FetchPartition) ([]FetchResult, int64, bool, []log.LogOffsetMetadata) {
	results := make([]FetchResult, len(parts))
	start := make([]log.LogOffsetMetadata, len(parts))
	remaining := int64(params.MaxBytes)
	var total int64
	anyErr := false
	for i, fp := range parts {
		r := &results[i]
		r.TopicPartition = fp.TopicPartition
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = -1, -1, -1
		r.DivergingEpoch = EpochEndOffset{-1, -1}
		r.PreferredReadReplica = -1
		start[i] = log.UnknownOffsetMetadata
		p, err := m.readablePartition(fp.TopicPartition, params)
		if err == nil {
			err = checkLeaderEpoch(p, fp.CurrentLeaderEpoch)
		}
		if err == nil && params.ReplicaID >= 0 {
			err = m.checkFollowerFetch(p, params.ReplicaID, params.ReplicaEpoch)
		}
		if err != nil {
			r.Err = err
			anyErr = true
			continue
		}
		l := p.Log
		if fp.HasLastFetchedEpoch && fp.LastFetchedEpoch >= 0 {
			// KIP-320: the fetcher's log diverged if the leader's ends
			// the fetcher's last epoch before its fetch offset.
			e, end := l.EndOffsetForEpoch(fp.LastFetchedEpoch)
			if e < 0 || end < 0 {
				// Kafka: the end of the last fetched epoch cannot be
				// determined; the fetcher resets its position.
				r.Err = fmt.Errorf("%w: could not determine the end offset of epoch %d of %s", kerr.OffsetOutOfRange, fp.LastFetchedEpoch, fp.TopicPartition)
				anyErr = true
				continue
			}
			if e < fp.LastFetchedEpoch || end < fp.FetchOffset {
				r.DivergingEpoch = EpochEndOffset{e, end}
				r.HighWatermark, r.LastStableOffset, r.LogStartOffset = l.HighWatermark(), l.LastStableOffset(), l.LogStartOffset()
				r.Records = log.FileSlice{}
				continue
			}
		}
		if params.ReplicaID < 0 && params.Client != nil && p.IsLeader() {
			if id := m.preferredReadReplica(p, *params.Client, fp.FetchOffset); id >= 0 {
				// Kafka's: no records, the offsets, and where to go.
				r.PreferredReadReplica = id
				r.HighWatermark, r.LastStableOffset, r.LogStartOffset = l.HighWatermark(), l.LastStableOffset(), l.LogStartOffset()
				continue
			}
		}
		leaderLEO := l.LogEndOffset()
		// The offsets are read before the data: what is read never goes
		// past the high watermark (or last stable offset) reported with
		// it. The LSO first: it is then at most the high watermark.
		lso := l.LastStableOffset()
		hw := l.HighWatermark()
		r.HighWatermark, r.LastStableOffset, r.LogStartOffset = hw, lso, l.LogStartOffset()
		limit := int64(fp.MaxBytes)
		if limit > remaining {
			limit = remaining
		}
		if limit < 0 {
			limit = 0
		}
		var data log.FetchData
		throttled := params.ReplicaID >= 0 && m.leaderThrottledReplica(p, params.ReplicaID)
		switch {
		case throttled && m.leaderQuota.Exceeded():
			// The leader's throttle: nothing for this out-of-sync
			// replica until the rate is under the bound again.
			data, err = l.Read(fp.FetchOffset, 0, leaderLEO, false)
		case params.ReplicaID >= 0: // followers read to the log end
			data, err = l.Read(fp.FetchOffset, int32(limit), leaderLEO, total == 0)
		case params.ReadCommitted:
			data, err = l.ReadCommitted(fp.FetchOffset, int32(limit), lso, total == 0)
		default:
			data, err = l.Read(fp.FetchOffset, int32(limit), hw, total == 0)
		}
		if m.movedToRemote(params, err) && m.remoteFetchQuotaExceeded() {
			// Over remote.log.manager.fetch.max.bytes.per.second:
			// nothing from remote storage this time, with no error,
			// so the other partitions are served (and waited for)
			// as usual (Kafka's empty FetchDataInfo).
			r.Records = log.FileSlice{}
			continue
		}
		if m.movedToRemote(params, err) {
			// Served from remote storage once the local reads are
			// done (readRemote).
			r.remote = &remoteRead{tp: remoteTopicIdPartition(p), offset: fp.FetchOffset, maxBytes: int32(limit), minOneMessage: total == 0}
			continue
		}
		if err != nil {
			if !errors.Is(err, kerr.OffsetOutOfRange) && !errors.Is(err, kerr.OffsetMovedToTieredStorage) {
				if ok, n := m.errLog.allow(time.Now()); ok {
					m.log.Error("read failed", "topic", fp.Topic, "partition", fp.Partition, "offset", fp.FetchOffset, "err", err, "failures_not_logged", n)
				}
			}
			r.Err = err
			anyErr = true
			continue
		}
		if err := servable(fp.TopicPartition, l, &data); err != nil {
			r.Err = err
			anyErr = true
			continue
		}
		if throttled {
			m.leaderQuota.Record(data.Records.Size)
		}
		if params.ReplicaID >= 0 {
			r.hwMoved = m.updateFollowerFetchState(p, params.ReplicaID, params.ReplicaEpoch, fp.FetchOffset, fp.LogStartOffset, leaderLEO)
			r.HighWatermark = l.HighWatermark()
		}
		start[i] = data.FetchOffsetMetadata
		r.Records = data.Records
		r.AbortedTransactions = data.AbortedTransactions
		total += data.Records.Size
		remaining -= data.Records.Size
		if data.Records.Size > 0 {
			if params.ReplicaID >= 0 {
				p.stats.replOut.Add(float64(data.Records.Size))
			} else {
				p.stats.bytesOut.Add(float64(data.Records.Size))
			}
		}
	}
	return results, total, anyErr, start
}

// takeMoved returns the partitions whose high watermark a follower's fetch
// moved.
func (m *Manager) takeMoved(results []FetchResult) []TopicPartition {
	var tps []TopicPartition
	for i := range results {
		if results[i].hwMoved {
			tps = append(tps, results[i].TopicPartition)
			results[i].hwMoved = false
		}
	}
	return tps
}

// servable cuts data before the first batch in it that the log scrubber
// found corrupt, or answers CORRUPT_MESSAGE if data starts with it: no
// client gets bytes known to be damaged, whatever its CRC setting
// (librdkafka checks none by default), and it learns where they are.
// Damage the scrubber has not found yet is served, as Kafka serves it, and
// the client's CRC check finds it.
func servable(tp TopicPartition, l *log.Log, data *log.FetchData) error {
	if data.Records.Size == 0 {
		return nil
	}
	c, ok := l.CorruptBatchIn(data.FetchOffsetMetadata.SegmentBaseOffset, data.Records.Pos, data.Records.Size)
	switch {
	case !ok:
		return nil
	case c.Position == data.Records.Pos:
		return apierr.Errorf(kerr.CorruptMessage, "Partition %s has a corrupt batch at offset %d (segment %d, position %d: %s), found by the log scrubber; it is not served",
			tp, c.Offset, data.FetchOffsetMetadata.SegmentBaseOffset, c.Position, c.Reason)
	}
	data.Records.Size = c.Position - data.Records.Pos
	return nil
}

// ListOffset answers one partition of ListOffsets on the caller's
// goroutine: the offset for a timestamp, or one of the special timestamps
// (-1 latest, -2 earliest, -3 max timestamp, -4 earliest local, -5
// latest tiered, -6 earliest pending upload). A search in remote storage is bounded by
// remote.list.offsets.request.timeout.ms. ListOffsets answers a request,
// with remote searches off the handler.
func (m *Manager) ListOffset(tp TopicPartition, currentLeaderEpoch int32, ts int64, isolation int8, replicaID int32) (log.TimestampOffset, error) {
	to, q, err := m.prepareListOffset(tp, currentLeaderEpoch, ts, isolation, replicaID)
	if err != nil || q == nil {
		return to, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.rl.cfg.ListOffsetsTimeout)
	defer cancel()
	return q.search(ctx)
}

// prepareListOffset answers what the partition's local state answers; a
// search by timestamp that must look in remote storage first is returned
// as q instead. A consumer (replicaID < 0) sees "latest" as the high
// watermark, or the last stable offset for read_committed (isolation 1),
// and no offset at or past it for a timestamp (Kafka's
// Partition.fetchOffsetForTimestamp with lastFetchableOffset); a replica
// sees the log end.
func (m *Manager) prepareListOffset(tp TopicPartition, currentLeaderEpoch int32, ts int64, isolation int8, replicaID int32) (to log.TimestampOffset, q *remoteListOffset, err error) {
	p, err := m.getPartition(tp)
	if err != nil {
		return log.TimestampOffset{}, nil, err
	}
	if err := checkLeaderEpoch(p, currentLeaderEpoch); err != nil {
		return log.TimestampOffset{}, nil, err
	}
	l := p.Log
	lastFetchable := l.LogEndOffset()
	switch {
	case replicaID >= 0:
	case isolation == 1:
		lastFetchable = l.LastStableOffset()
	default:
		lastFetchable = l.HighWatermark()
	}
	switch ts {
	case -1: // latest
		return log.TimestampOffset{Timestamp: -1, Offset: lastFetchable, LeaderEpoch: p.LeaderEpoch()}, nil, nil
	case -5: // latest tiered: the highest offset in remote storage, -1 if none
		off := l.HighestOffsetInRemoteStorage()
		if !l.Tiered() || off < 0 {
			return log.TimestampOffset{Timestamp: -1, Offset: -1, LeaderEpoch: -1}, nil, nil
		}
		return log.TimestampOffset{Timestamp: -1, Offset: off, LeaderEpoch: l.EpochForOffset(off)}, nil, nil
	case -6: // earliest pending upload (KIP-1023): the first offset not in remote storage
		if !l.Tiered() {
			return log.TimestampOffset{Timestamp: -1, Offset: -1, LeaderEpoch: -1}, nil, nil
		}
		switch cur := l.HighestOffsetInRemoteStorage(); {
		case cur >= 0:
			off := max(cur+1, l.LogStartOffset())
			return log.TimestampOffset{Timestamp: -1, Offset: off, LeaderEpoch: l.EpochForOffset(off)}, nil, nil
		case l.LocalLogStartOffset() != l.LogStartOffset():
			// Segments were uploaded, but this leader does not know yet.
			return log.TimestampOffset{Timestamp: -1, Offset: -1, LeaderEpoch: -1}, nil, nil
		}
		ts = -2 // nothing uploaded yet: the earliest offset
	}
	q = &remoteListOffset{m: m, p: p, ts: ts, replicaID: replicaID, lastFetchable: lastFetchable, rl: m.remote.Load()}
	if !q.needsRemote() {
		q.rl = nil
		to, err = q.search(context.Background())
		return to, nil, err
	}
	return log.TimestampOffset{}, q, nil
}

// DeleteRecords moves a partition's log start offset up to offset (-1:
// the high watermark) and returns the new low watermark.
func (m *Manager) DeleteRecords(tp TopicPartition, offset int64) (int64, error) {
	p, err := m.getPartition(tp)
	if err != nil {
		return -1, err
	}
	if offset == -1 {
		offset = p.Log.HighWatermark()
	}
	if offset < 0 || offset > p.Log.HighWatermark() {
		return -1, fmt.Errorf("%w: cannot delete records before %d: the high watermark is %d", kerr.OffsetOutOfRange, offset, p.Log.HighWatermark())
	}
	return p.Log.DeleteRecordsBefore(offset)
}
