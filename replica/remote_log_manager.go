package replica

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
)

// RemoteLogMetadataManager keeps the remote segments' metadata (Kafka's
// RemoteLogMetadataManager): the writes are durable before they return,
// and the reads answer from what this broker has applied.
type RemoteLogMetadataManager interface {
	AddRemoteLogSegmentMetadata(ctx context.Context, m *remote.RemoteLogSegmentMetadata) error
	UpdateRemoteLogSegmentMetadata(ctx context.Context, u remote.RemoteLogSegmentMetadataUpdate) error
	// ListRemoteLogSegments returns the partition's remote segments in
	// every state, by start offset.
	ListRemoteLogSegments(tp remote.TopicIdPartition) ([]*remote.RemoteLogSegmentMetadata, error)
	// RemoteLogSegmentMetadata returns the finished segment holding
	// offset within leaderEpoch's range in it; false if none.
	RemoteLogSegmentMetadata(tp remote.TopicIdPartition, leaderEpoch int32, offset int64) (*remote.RemoteLogSegmentMetadata, bool, error)
	// PutRemotePartitionDeleteMetadata records a partition's removal
	// from remote storage; DELETE_PARTITION_FINISHED forgets it.
	PutRemotePartitionDeleteMetadata(ctx context.Context, d remote.RemotePartitionDeleteMetadata) error
}

// RemoteLogManager is the leader side of tiered storage (Kafka's
// RemoteLogManager): it copies a tiered log's closed segments to remote
// storage (RLMCopyTask), expires remote segments by the topic's total
// retention (RLMExpirationTask), and reads what is only remote.
//
// A copy is registered before it starts (COPY_SEGMENT_STARTED) and counts
// only once finished (COPY_SEGMENT_FINISHED); only then does the log learn
// the new highest offset in remote storage, so local retention never
// deletes a segment whose copy could still fail. A copy that fails is
// deleted from the store and its metadata moved to DELETE_SEGMENT_FINISHED;
// one cut short by a crash stays COPY_SEGMENT_STARTED and is deleted by the
// next expiration pass of whichever broker leads (unreferenced segments).
type RemoteLogManager struct {
	brokerID int32
	rsm      remote.RemoteStorageManager
	rlmm     RemoteLogMetadataManager
	logger   *slog.Logger
	now      func() time.Time
	indexes  *remoteIndexCache
	// readAhead keeps the streams of the segments consumers read in
	// order, on ctx, which Close ends.
	readAhead *remoteReadAhead
	ctx       context.Context
	cancel    context.CancelFunc
	// metrics, once the ReplicaManager runs it (nil: none).
	metrics *remoteLogMetrics
	// copyQuota is remote.log.manager.copy.max.bytes.per.second (Kafka's
	// RLMCopyQuotaManager); copyMu makes its check and record one step
	// across the partitions' tasks.
	copyQuota *ReplicationQuota
	copyMu    sync.Mutex
}

// NewRemoteLogManager returns a RemoteLogManager on a store and a metadata
// manager.
func NewRemoteLogManager(brokerID int32, rsm remote.RemoteStorageManager, rlmm RemoteLogMetadataManager, logger *slog.Logger, now func() time.Time) *RemoteLogManager {
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &RemoteLogManager{brokerID: brokerID, rsm: rsm, rlmm: rlmm, logger: logger, now: now,
		indexes: newRemoteIndexCache(defaultRemoteIndexCacheBytes), readAhead: newRemoteReadAhead(ctx, rsm, now),
		ctx: ctx, cancel: cancel, copyQuota: NewReplicationQuota(11, time.Second, nil)}
}

// Close closes the streams kept open for remote reads and waits for
// their read-aheads; reads after it open and close their own. The store
// is the caller's. Idempotent.
func (r *RemoteLogManager) Close() {
	r.cancel()
	r.readAhead.close()
}

// waitCopyQuota waits until the copy quota allows another segment, then
// counts its bytes, as Kafka's RLMCopyTask does before each copy: a
// segment is copied whole, and the next waits until the rate, measured
// over remote.log.manager.copy.quota.window.num windows, is under the
// bound again. False if ctx ends or leading() turns false first.
func (r *RemoteLogManager) waitCopyQuota(ctx context.Context, size int64, leading func() bool) bool {
	r.copyMu.Lock()
	defer r.copyMu.Unlock()
	for r.copyQuota.Exceeded() {
		t := time.NewTimer(r.copyQuota.window)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		if !leading() {
			return false
		}
	}
	r.copyQuota.Record(size)
	return true
}

// SyncCopiedOffset sets the log's highest offset in remote storage from
// the remote metadata, as a new leader does before it copies (Kafka's
// findHighestRemoteOffset): the end of the last finished segment whose
// epochs the log's own history has. A log that does not know its start
// below the local one (after a restart) gets it back from the finished
// segments that reach the local log start without a gap, or, if none
// does, learns that it starts at its local start (Kafka's
// findLogStartOffset); either way its leader epochs below the log start
// go.
func (r *RemoteLogManager) SyncCopiedOffset(tp remote.TopicIdPartition, l *log.Log) error {
	segs, err := r.rlmm.ListRemoteLogSegments(tp)
	if err != nil {
		return err
	}
	l.RestoreLogStartFromRemote(remoteRunStart(segs, l.LocalLogStartOffset()))
	for _, s := range slices.Backward(segs) {
		if s.State != remote.CopySegmentFinished {
			continue
		}
		epochs := s.Epochs()
		last := epochs[len(epochs)-1]
		if l.EpochForOffset(s.EndOffset) == last || s.EndOffset < l.LocalLogStartOffset() {
			l.UpdateHighestOffsetInRemoteStorage(s.EndOffset)
			return nil
		}
	}
	return nil
}

// remoteRunStart is the first offset of the finished remote segments
// that run without a gap up to localStart (localStart if none).
func remoteRunStart(segs []*remote.RemoteLogSegmentMetadata, localStart int64) int64 {
	start := localStart
	for moved := true; moved; {
		moved = false
		for _, s := range segs {
			if s.State == remote.CopySegmentFinished && s.StartOffset < start && s.EndOffset >= start-1 {
				start, moved = s.StartOffset, true
			}
		}
	}
	return start
}

// CopyLogSegments copies the log's copyable segments in order, stopping at
// the first failure or once leading() is false (Kafka's
// copyLogSegmentsToRemote). It returns the number copied.
func (r *RemoteLogManager) CopyLogSegments(ctx context.Context, tp remote.TopicIdPartition, l *log.Log, leading func() bool) (int, error) {
	n := 0
	for _, c := range l.CopyableSegments() {
		if !leading() || ctx.Err() != nil {
			return n, ctx.Err()
		}
		if !r.waitCopyQuota(ctx, c.Size, leading) {
			return n, ctx.Err()
		}
		if err := r.copySegment(ctx, tp, l, c, leading); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (r *RemoteLogManager) copySegment(ctx context.Context, tp remote.TopicIdPartition, l *log.Log, c log.CopyableSegment, leading func() bool) error {
	m := &remote.RemoteLogSegmentMetadata{
		ID:          remote.RemoteLogSegmentId{TopicIdPartition: tp, ID: uuid.Random()},
		StartOffset: c.BaseOffset, EndOffset: c.NextOffset - 1, BrokerID: r.brokerID,
		MaxTimestampMs: c.MaxTimestamp, EventTimestampMs: r.now().UnixMilli(),
		SegmentLeaderEpochs: c.LeaderEpochs, SegmentSizeInBytes: int32(c.Size),
		State: remote.CopySegmentStarted, TxnIdxEmpty: c.TxnIndex == "",
	}
	if err := r.rlmm.AddRemoteLogSegmentMetadata(ctx, m); err != nil {
		return fmt.Errorf("registering the copy of %s: %w", m.ID, err)
	}
	custom, err := r.rsm.CopyLogSegmentData(ctx, m, remote.LogSegmentData{
		LogSegment: c.LogPath, OffsetIndex: c.OffsetIndex, TimeIndex: c.TimeIndex,
		TransactionIndex: c.TxnIndex, ProducerSnapshot: c.ProducerSnapshot, LeaderEpochIndex: c.LeaderEpochCheckpoint,
	})
	r.metrics.copied(tp.Topic, c.Size, err)
	if err != nil {
		r.abandonCopy(m)
		return fmt.Errorf("copying segment %d of %s: %w", c.BaseOffset, tp, err)
	}
	if !leading() {
		// Leadership or tiering went while the data was copied: the
		// copy is not registered as finished but cleaned up.
		r.abandonCopy(m)
		return nil
	}
	if err := r.rlmm.UpdateRemoteLogSegmentMetadata(ctx, remote.RemoteLogSegmentMetadataUpdate{
		ID: m.ID, EventTimestampMs: r.now().UnixMilli(), CustomMetadata: custom,
		State: remote.CopySegmentFinished, BrokerID: r.brokerID,
	}); err != nil {
		return fmt.Errorf("finishing the copy of %s: %w", m.ID, err)
	}
	l.UpdateHighestOffsetInRemoteStorage(m.EndOffset)
	r.logger.Info("copied segment to remote storage", "partition", tp.String(), "segment", m.ID.ID.String(),
		"start_offset", m.StartOffset, "end_offset", m.EndOffset, "bytes", c.Size)
	return nil
}

// abandonCopy deletes what a failed copy left and records it; a failure
// here leaves the segment COPY_SEGMENT_STARTED for expiration to delete.
func (r *RemoteLogManager) abandonCopy(m *remote.RemoteLogSegmentMetadata) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.deleteRemoteSegment(ctx, m); err != nil {
		r.logger.Warn("cleaning up a failed remote copy failed; the next expiration retries", "segment", m.ID.String(), "err", err)
	}
}

// deleteRemoteSegment moves a segment through DELETE_SEGMENT_STARTED,
// deletes its objects and records DELETE_SEGMENT_FINISHED (Kafka's
// deleteRemoteLogSegment).
func (r *RemoteLogManager) deleteRemoteSegment(ctx context.Context, m *remote.RemoteLogSegmentMetadata) error {
	if m.State != remote.DeleteSegmentStarted {
		if err := r.rlmm.UpdateRemoteLogSegmentMetadata(ctx, remote.RemoteLogSegmentMetadataUpdate{
			ID: m.ID, EventTimestampMs: r.now().UnixMilli(), State: remote.DeleteSegmentStarted, BrokerID: r.brokerID,
		}); err != nil {
			return err
		}
	}
	r.indexes.remove(m.ID.ID)
	r.readAhead.removeSegment(m.ID.ID)
	err := r.rsm.DeleteLogSegmentData(ctx, m)
	r.metrics.deleted(m.ID.TopicIdPartition.Topic, err)
	if err != nil {
		return err
	}
	return r.rlmm.UpdateRemoteLogSegmentMetadata(ctx, remote.RemoteLogSegmentMetadataUpdate{
		ID: m.ID, EventTimestampMs: r.now().UnixMilli(), State: remote.DeleteSegmentFinished, BrokerID: r.brokerID,
	})
}

// ExpireRemoteSegments deletes the remote segments that the topic's total
// retention or the log start offset no longer keep, and segments whose
// copy never finished or whose deletion did not, then moves the log start
// offset past what went (Kafka's RLMExpirationTask). Size retention counts
// remote segments wholly below the local log start plus the local log.
func (r *RemoteLogManager) ExpireRemoteSegments(ctx context.Context, tp remote.TopicIdPartition, l *log.Log, retentionMs, retentionBytes int64) (int, error) {
	segs, err := r.rlmm.ListRemoteLogSegments(tp)
	if err != nil {
		return 0, err
	}
	copied := l.HighestOffsetInRemoteStorage()
	localStart, logStart := l.LocalLogStartOffset(), l.LogStartOffset()
	var size int64
	if retentionBytes >= 0 {
		size = l.Size()
		for _, s := range segs {
			if s.State == remote.CopySegmentFinished && s.EndOffset < localStart {
				size += int64(s.SegmentSizeInBytes)
			}
		}
	}
	now := r.now().UnixMilli()
	n, newStart := 0, int64(-1)
	// kept: retention keeps a finished segment, and so every later one
	// (it deletes the oldest first); copies that never finished and
	// deletions cut short are cleaned up past it all the same.
	kept := false
	for _, s := range segs {
		var why string
		switch {
		case s.State == remote.DeleteSegmentStarted:
			why = "deletion not finished"
		case s.State == remote.CopySegmentStarted && s.EndOffset <= copied:
			// A copy that did not finish, and a later one covered its
			// offsets: it is unreferenced.
			why = "copy not finished"
		case s.State != remote.CopySegmentFinished:
			continue
		case s.EndOffset < logStart:
			why = "log start offset"
		case !kept && retentionMs >= 0 && now-s.MaxTimestampMs > retentionMs:
			why = "retention.ms"
		case !kept && retentionBytes >= 0 && size > retentionBytes && s.EndOffset < localStart:
			why = "retention.bytes"
		default:
			kept = true
			continue
		}
		if err := r.deleteRemoteSegment(ctx, s); err != nil {
			return n, errors.Join(fmt.Errorf("deleting remote segment %s: %w", s.ID, err), r.moveLogStart(l, newStart))
		}
		if s.State == remote.CopySegmentFinished {
			size -= int64(s.SegmentSizeInBytes)
			newStart = max(newStart, s.EndOffset+1)
		}
		n++
		r.logger.Info("deleted remote segment", "partition", tp.String(), "segment", s.ID.ID.String(),
			"start_offset", s.StartOffset, "end_offset", s.EndOffset, "reason", why)
	}
	return n, r.moveLogStart(l, newStart)
}

func (r *RemoteLogManager) moveLogStart(l *log.Log, start int64) error {
	if start < 0 {
		return nil
	}
	_, err := l.UpdateLogStartOffsetFromRemoteTier(start)
	return err
}

// Read reads whole batches from the remote segment holding offset: the
// batch with offset first (whole, if minOneMessage), then as many as fit
// in maxBytes, never past the segment (Kafka's RemoteLogManager.read). A
// read_committed fetch also gets the segment's aborted transactions that
// overlap what was read.
func (r *RemoteLogManager) Read(ctx context.Context, tp remote.TopicIdPartition, offset int64, maxBytes int32, minOneMessage, readCommitted bool) (d log.FetchData, err error) {
	defer func() { r.metrics.fetched(tp.Topic, d.Records.Size, err) }()
	return r.read(ctx, tp, offset, maxBytes, minOneMessage, readCommitted)
}

func (r *RemoteLogManager) read(ctx context.Context, tp remote.TopicIdPartition, offset int64, maxBytes int32, minOneMessage, readCommitted bool) (log.FetchData, error) {
	none := log.FetchData{FirstBatchOffset: -1, NextOffset: -1, FetchOffsetMetadata: log.UnknownOffsetMetadata}
	m, err := r.segmentFor(tp, offset)
	if err != nil {
		return none, err
	}
	recs, first, next, pos, err := r.readAhead.read(ctx, m, offset, int64(maxBytes), minOneMessage, func() (int64, error) {
		return r.positionOf(ctx, m, offset)
	})
	if err != nil {
		return none, err
	}
	d := log.FetchData{Records: log.BytesSlice(recs), FirstBatchOffset: first, NextOffset: next,
		FetchOffsetMetadata: log.LogOffsetMetadata{MessageOffset: offset, SegmentBaseOffset: m.StartOffset, RelativePosition: pos}}
	if readCommitted {
		d.AbortedTransactions = []log.AbortedTxn{}
		if !m.TxnIdxEmpty && len(recs) > 0 {
			if d.AbortedTransactions, err = r.abortedIn(ctx, m, offset, next); err != nil {
				return none, err
			}
		}
	}
	return d, nil
}

// segmentFor is the finished remote segment holding offset, the newest
// copy if offsets were copied twice.
func (r *RemoteLogManager) segmentFor(tp remote.TopicIdPartition, offset int64) (*remote.RemoteLogSegmentMetadata, error) {
	segs, err := r.rlmm.ListRemoteLogSegments(tp)
	if err != nil {
		return nil, err
	}
	var found *remote.RemoteLogSegmentMetadata
	for _, s := range segs {
		if s.State == remote.CopySegmentFinished && s.StartOffset <= offset && offset <= s.EndOffset {
			found = s
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w: no remote segment of %s holds offset %d", remote.ErrResourceNotFound, tp, offset)
	}
	return found, nil
}

// positionOf finds the position to scan from in the segment's remote
// offset index: the last entry at or below offset (a binary search: the
// entries ascend).
func (r *RemoteLogManager) positionOf(ctx context.Context, m *remote.RemoteLogSegmentMetadata, offset int64) (int64, error) {
	idx, err := r.indexes.get(ctx, r.rsm, m, remote.IndexOffset)
	if err != nil {
		return 0, err
	}
	n := len(idx) / log.OffsetIndexEntrySize
	// The first entry above offset; the one before it is the answer.
	i := sort.Search(n, func(i int) bool {
		return m.StartOffset+int64(binary.BigEndian.Uint32(idx[i*log.OffsetIndexEntrySize:])) > offset
	})
	if i == 0 {
		return 0, nil
	}
	return int64(binary.BigEndian.Uint32(idx[(i-1)*log.OffsetIndexEntrySize+4:])), nil
}

// abortedIn returns the segment's aborted transactions overlapping
// [from, to).
func (r *RemoteLogManager) abortedIn(ctx context.Context, m *remote.RemoteLogSegmentMetadata, from, to int64) ([]log.AbortedTxn, error) {
	rc, err := r.rsm.FetchIndex(ctx, m, remote.IndexTransaction)
	if errors.Is(err, remote.ErrResourceNotFound) || errors.Is(err, os.ErrNotExist) {
		return []log.AbortedTxn{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 64<<20))
	if err != nil {
		return nil, err
	}
	all, err := log.DecodeTxnIndex(b, m.StartOffset)
	if err != nil {
		return nil, err
	}
	out := []log.AbortedTxn{}
	for _, t := range all {
		if t.LastOffset >= from && t.FirstOffset < to {
			out = append(out, t)
		}
	}
	return out, nil
}

// FindOffsetByTimestamp searches the finished remote segments for the
// first record at or after minOffset with a timestamp at or after ts
// (Kafka's RemoteLogManager.findOffsetByTimestamp): the first segment
// whose max timestamp reaches ts, from the last entry of its time index
// below ts. false: no remote record qualifies.
func (r *RemoteLogManager) FindOffsetByTimestamp(ctx context.Context, tp remote.TopicIdPartition, ts, minOffset int64) (log.TimestampOffset, bool, error) {
	segs, err := r.rlmm.ListRemoteLogSegments(tp)
	if err != nil {
		return log.TimestampOffset{}, false, err
	}
	var prevEnd int64 = -1
	for _, s := range segs {
		// A segment copied twice counts once: the first finished copy.
		if s.State != remote.CopySegmentFinished || s.EndOffset < minOffset || s.MaxTimestampMs < ts || s.EndOffset <= prevEnd {
			continue
		}
		prevEnd = s.EndOffset
		to, ok, err := r.searchSegment(ctx, s, ts, max(minOffset, s.StartOffset))
		if err != nil || ok {
			return to, ok, err
		}
	}
	return log.TimestampOffset{}, false, nil
}

// searchSegment scans one remote segment for ts.
func (r *RemoteLogManager) searchSegment(ctx context.Context, m *remote.RemoteLogSegmentMetadata, ts, minOffset int64) (log.TimestampOffset, bool, error) {
	from := minOffset
	if idx, err := r.indexes.get(ctx, r.rsm, m, remote.IndexTimestamp); err == nil {
		for i := 0; i+log.TimeIndexEntrySize <= len(idx); i += log.TimeIndexEntrySize {
			if int64(binary.BigEndian.Uint64(idx[i:])) >= ts {
				break
			}
			from = max(from, m.StartOffset+int64(binary.BigEndian.Uint32(idx[i+8:])))
		}
	}
	pos, err := r.positionOf(ctx, m, from)
	if err != nil {
		return log.TimestampOffset{}, false, err
	}
	rc, err := r.rsm.FetchLogSegment(ctx, m, pos, -1)
	if err != nil {
		return log.TimestampOffset{}, false, fmt.Errorf("fetching remote segment %s: %w", m.ID, err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	remaining := int64(m.SegmentSizeInBytes) - pos
	hdr := make([]byte, log.BatchHeaderSize)
	for {
		if _, err := io.ReadFull(br, hdr); err != nil {
			if errors.Is(err, io.EOF) {
				return log.TimestampOffset{}, false, nil
			}
			return log.TimestampOffset{}, false, err
		}
		h, err := log.ParseBatchHeader(hdr)
		if err != nil {
			return log.TimestampOffset{}, false, err
		}
		size := int64(h.TotalSize())
		if size > remaining {
			return log.TimestampOffset{}, false, fmt.Errorf("batch at offset %d of %s claims %d bytes, past the segment's end", h.BaseOffset, m.ID, size)
		}
		remaining -= size
		if h.MaxTimestamp < ts || h.LastOffset() < minOffset {
			if _, err := io.CopyN(io.Discard, br, size-log.BatchHeaderSize); err != nil {
				return log.TimestampOffset{}, false, err
			}
			continue
		}
		batch := append(make([]byte, 0, size), hdr...)
		batch = batch[:size]
		if _, err := io.ReadFull(br, batch[log.BatchHeaderSize:]); err != nil {
			return log.TimestampOffset{}, false, err
		}
		to, err := log.TimestampInBatch(batch, ts, minOffset)
		return to, err == nil, err
	}
}

// DeletePartition removes a deleted topic's partition from remote storage
// (Kafka's RemoteLogManager.stopPartitions with deleteRemoteLog):
// DELETE_PARTITION_MARKED, then DELETE_PARTITION_STARTED, every segment
// deleted as expiration deletes one, then DELETE_PARTITION_FINISHED,
// which drops the partition's metadata. It returns the segments deleted.
func (r *RemoteLogManager) DeletePartition(ctx context.Context, tp remote.TopicIdPartition) (int, error) {
	put := func(st remote.RemotePartitionDeleteState) error {
		return r.rlmm.PutRemotePartitionDeleteMetadata(ctx, remote.RemotePartitionDeleteMetadata{
			TopicIdPartition: tp, State: st, EventTimestampMs: r.now().UnixMilli(), BrokerID: r.brokerID})
	}
	segs, err := r.rlmm.ListRemoteLogSegments(tp)
	if err != nil || len(segs) == 0 {
		return 0, err
	}
	if err := put(remote.DeletePartitionMarked); err != nil {
		return 0, err
	}
	if err := put(remote.DeletePartitionStarted); err != nil {
		return 0, err
	}
	n := 0
	for _, s := range segs {
		if s.State == remote.DeleteSegmentFinished {
			continue
		}
		if err := r.deleteRemoteSegment(ctx, s); err != nil {
			return n, fmt.Errorf("deleting remote segment %s: %w", s.ID, err)
		}
		n++
	}
	if err := put(remote.DeletePartitionFinished); err != nil {
		return n, err
	}
	r.logger.Info("deleted the partition from remote storage", "partition", tp.String(), "segments", n)
	return n, nil
}
