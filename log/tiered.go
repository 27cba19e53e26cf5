package log

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Tiered storage (KIP-405) as the log sees it. A tiered log
// (Config.RemoteStorageEnable) has two starts: the log start offset, the
// first offset a consumer may read, and the local log start offset, the
// first on this broker's disk. The RemoteLogManager (package replica)
// copies closed segments to remote storage and reports the highest offset
// copied (UpdateHighestOffsetInRemoteStorage); local retention
// (local.retention.ms and local.retention.bytes) then deletes only local
// segments wholly at or below it, and moves only the local start. Total
// retention over both tiers is the RemoteLogManager's: it deletes remote
// segments and moves the log start with UpdateLogStartOffsetFromRemoteTier.
// A read between the two starts fails with an error wrapping
// kerr.OffsetMovedToTieredStorage, which the caller serves from remote
// storage (a consumer) or answers as is (a follower).
//
// The log start offset survives restarts in log-start-offset-checkpoint,
// as ever; a tiered log whose checkpoint is below its first local segment
// keeps it. The leader-epoch cache is truncated only to the log start
// offset, not the local one: remote segments are found by epoch.

// logStartLocked is the log start offset; segMu held.
func (l *Log) logStartLocked() int64 {
	if l.remoteStart >= 0 && l.remoteStart < l.logStart {
		return l.remoteStart
	}
	return l.logStart
}

// moveLocalStartLocked moves the local log start up to first after local
// segments were deleted; a tiered log keeps its log start below it.
// segMu held.
func (l *Log) moveLocalStartLocked(first int64) {
	if first <= l.logStart {
		return
	}
	if l.tiered.Load() && l.remoteStart < 0 {
		l.remoteStart = l.logStart
	}
	l.logStart = first
	if l.remoteStart >= l.logStart {
		l.remoteStart = -1
	}
}

// moveLogStartLocked moves the log start offset up to offset (DeleteRecords,
// remote retention, a leader's log start): below the local start only the
// remote start moves. segMu held.
func (l *Log) moveLogStartLocked(offset int64) bool {
	if offset <= l.logStartLocked() {
		return false
	}
	if offset < l.logStart {
		l.remoteStart = offset
		return true
	}
	l.logStart = offset
	l.remoteStart = -1
	return true
}

// Tiered reports whether the log is tiered (remote.storage.enable).
func (l *Log) Tiered() bool { return l.tiered.Load() }

// HighestOffsetInRemoteStorage is the highest offset copied to remote
// storage, -1 if none (Kafka's highestOffsetInRemoteStorage).
func (l *Log) HighestOffsetInRemoteStorage() int64 { return l.highestRemote.Load() }

// UpdateHighestOffsetInRemoteStorage records that every offset up to
// offset is in remote storage; it never moves back.
func (l *Log) UpdateHighestOffsetInRemoteStorage(offset int64) {
	for {
		cur := l.highestRemote.Load()
		if offset <= cur || l.highestRemote.CompareAndSwap(cur, offset) {
			return
		}
	}
}

// UpdateLogStartOffsetFromRemoteTier moves the log start offset up to
// offset after remote segments below it were deleted (Kafka's
// updateLogStartOffsetFromRemoteTier). It returns the log start offset.
func (l *Log) UpdateLogStartOffsetFromRemoteTier(offset int64) (int64, error) {
	if !l.tiered.Load() {
		return 0, fmt.Errorf("%w: log %s is not tiered", kerr.InvalidRequest, l.tp)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.segMu.Lock()
	offset = min(offset, l.hw)
	moved := l.moveLogStartLocked(offset)
	start := l.logStartLocked()
	l.segMu.Unlock()
	if moved {
		if err := l.epochs.truncateFromStart(start); err != nil {
			l.logger.Warn("writing leader-epoch-checkpoint failed", "partition", l.tp.String(), "err", err)
		}
	}
	return start, nil
}

// RestoreLogStartFromRemote lowers a tiered log's log start offset to
// offset, below its local log start, where the remote metadata shows the
// records from offset on are in remote storage and the log does not know
// its start below the local one: after a restart whose
// log-start-offset-checkpoint lacked it (a kill before the first
// checkpoint, or a log loaded before its topic's config said tiered).
// A log start known already is never moved. Then, as Kafka's leader does
// with the log start it finds (findLogStartOffset), the leader-epoch
// cache, kept whole below the local start at load, is cut to the log
// start (offset not below the local start: the local start). It returns
// the log start.
func (l *Log) RestoreLogStartFromRemote(offset int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.segMu.Lock()
	if !l.tiered.Load() {
		defer l.segMu.Unlock()
		return l.logStartLocked()
	}
	if l.remoteStart < 0 && offset >= 0 && offset < l.logStart {
		l.remoteStart = offset
		l.logger.Info("log start offset restored from remote storage", "partition", l.tp.String(),
			"log_start_offset", offset, "local_log_start_offset", l.logStart)
	}
	start := l.logStartLocked()
	l.segMu.Unlock()
	l.truncateEpochsToLogStartLocked()
	return start
}

// localRetention returns the retention.ms and retention.bytes that apply
// to local segments: local.retention.* for a tiered log (-2: the total
// retention's), retention.* otherwise.
func (c Config) localRetention() (ms, bytes int64) {
	ms, bytes = c.RetentionMs, c.RetentionBytes
	if !c.RemoteStorageEnable {
		return ms, bytes
	}
	if c.LocalRetentionMs != -2 {
		ms = c.LocalRetentionMs
	}
	if c.LocalRetentionBytes != -2 {
		bytes = c.LocalRetentionBytes
	}
	return ms, bytes
}

// copiedToRemote reports whether a local segment followed by next (nil:
// the active segment) may go by local retention: a tiered log deletes
// only what is in remote storage (Kafka's isSegmentEligibleForDeletion),
// so never its active segment. With copying disabled
// (remote.log.copy.disable) nothing more is copied and local retention
// applies as to any log.
func (l *Log) copiedToRemote(next *Segment) bool {
	if !l.cfg.RemoteStorageEnable || l.cfg.RemoteLogCopyDisable {
		return true
	}
	return next != nil && next.baseOffset > 0 && next.baseOffset-1 <= l.highestRemote.Load()
}

// movedToTieredStorage is the error of a read between the log start and
// the local log start of a tiered log.
func movedToTieredStorage(tp TopicPartition, offset, start, localStart int64) error {
	return fmt.Errorf("%w: offset %d of %s is in remote storage (log start %d, local log start %d)", kerr.OffsetMovedToTieredStorage, offset, tp, start, localStart)
}

// CopyableSegment is a closed local segment the RemoteLogManager may copy
// to remote storage, with the paths of its files (Kafka's candidate
// segments, with their LogSegmentData).
type CopyableSegment struct {
	BaseOffset   int64
	NextOffset   int64 // the next segment's base: the segment ends before it
	Size         int64
	MaxTimestamp int64
	LogPath      string
	OffsetIndex  string
	TimeIndex    string
	// TxnIndex is "" when the segment has no aborted transactions.
	TxnIndex string
	// ProducerSnapshot is the producer snapshot at NextOffset, "" if
	// there is none (a log that never had producer state).
	ProducerSnapshot string
	// LeaderEpochs maps each epoch with records in the segment to its
	// first offset in it; LeaderEpochCheckpoint is the leader-epoch
	// checkpoint up to NextOffset, in the file's format.
	LeaderEpochs          map[int32]int64
	LeaderEpochCheckpoint []byte
}

// CopyableSegments returns the closed segments above the highest offset in
// remote storage whose records are all below the last stable offset (and
// so the high watermark), oldest first (Kafka's candidateLogSegments: the
// active segment is never copied). Nothing for a log that is not tiered
// or whose copying is disabled.
func (l *Log) CopyableSegments() []CopyableSegment {
	if !l.tiered.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.RemoteLogCopyDisable || l.usable() != nil {
		return nil
	}
	lso := l.LastStableOffset()
	from := l.highestRemote.Load() + 1
	l.segMu.RLock()
	segs := l.segs
	var out []CopyableSegment
	for i := 0; i+1 < len(segs); i++ {
		s, next := segs[i], segs[i+1]
		if next.baseOffset <= from || s.size == 0 {
			continue
		}
		if next.baseOffset > lso {
			break
		}
		out = append(out, CopyableSegment{
			BaseOffset: s.baseOffset, NextOffset: next.baseOffset, Size: s.size, MaxTimestamp: s.maxTs,
			LogPath: s.logPath(), OffsetIndex: s.offIdx.path, TimeIndex: s.timeIdx.path,
		})
		if len(s.txnIdx) > 0 {
			out[len(out)-1].TxnIndex = s.txnIndexPath()
		}
	}
	l.segMu.RUnlock()
	for i := range out {
		c := &out[i]
		if _, ok := slices.BinarySearch(l.snapshots, c.NextOffset); ok {
			c.ProducerSnapshot = snapshotPath(l.dir, c.NextOffset)
		}
		c.LeaderEpochs, c.LeaderEpochCheckpoint = l.epochs.between(c.BaseOffset, c.NextOffset)
	}
	return out
}

// between returns the epochs with records in [start, end) and their first
// offsets there, and the checkpoint of the entries before end.
func (c *leaderEpochCache) between(start, end int64) (map[int32]int64, []byte) {
	epochs := map[int32]int64{}
	var kept []EpochEntry
	for i, e := range c.entries {
		if e.StartOffset >= end {
			break
		}
		kept = append(kept, e)
		next := end
		if i+1 < len(c.entries) {
			next = min(next, c.entries[i+1].StartOffset)
		}
		if next > start {
			epochs[e.Epoch] = max(e.StartOffset, start)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(kept))
	for _, e := range kept {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return epochs, b.Bytes()
}

// EpochForOffset returns the leader epoch in which offset was written, -1
// if the leader-epoch cache does not know.
func (l *Log) EpochForOffset(offset int64) int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.epochForOffset(offset)
}

// RemoteCopyLag is what a tiered log has yet to copy: its closed local
// segments not wholly in remote storage, and their bytes (Kafka's
// RemoteCopyLagSegments and RemoteCopyLagBytes, the local-only segments
// but the active one). Zero for a log that is not tiered.
func (l *Log) RemoteCopyLag() (segments int, bytes int64) {
	if !l.tiered.Load() {
		return 0, 0
	}
	copied := l.highestRemote.Load()
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	for i := 0; i+1 < len(l.segs); i++ {
		if l.segs[i+1].baseOffset-1 > copied {
			segments++
			bytes += l.segs[i].size
		}
	}
	return segments, bytes
}

// RestoreRemoteLogAuxState starts a follower's tiered log over, empty, at
// nextOffset (the end of the remote segment holding the offset below the
// leader's local log start, plus one) with what lies below it rebuilt
// from that segment in remote storage: the log's part of Kafka's
// TierStateMachine.buildRemoteLogAuxState. The log start below is
// logStart (the leader's); the leader-epoch cache becomes the segment's
// LEADER_EPOCH index, its entries below nextOffset (truncated to the log
// start, as the leader's cache is), so OffsetForLeaderEpoch answers epochs
// that ended below the local log start as the leader would; and
// producerSnapshot, the segment's PRODUCER_SNAPSHOT index, becomes the
// snapshot file of nextOffset and the producer state is loaded from it,
// so a producer that wrote only below nextOffset is known (nil: none,
// the producer state starts empty). A snapshot that does not decode is
// refused before anything changes.
func (l *Log) RestoreRemoteLogAuxState(nextOffset, logStart int64, epochs []EpochEntry, producerSnapshot []byte) error {
	if nextOffset < 0 {
		return fmt.Errorf("log: cannot start %s at negative offset %d", l.tp, nextOffset)
	}
	if producerSnapshot != nil {
		if _, err := DecodeProducerSnapshot(producerSnapshot); err != nil {
			return fmt.Errorf("restoring the producer state of %s from remote storage: %w", l.tp, err)
		}
	}
	unlock, err := l.lockForTruncation()
	if err != nil {
		return err
	}
	defer unlock()
	if err := l.truncateFullyAndStartAt(nextOffset); err != nil {
		return err
	}
	fail := func(err error) error {
		l.failed = err
		return fmt.Errorf("%w: restoring %s from remote storage: %w", kerr.KafkaStorageError, l.tp, err)
	}
	l.segMu.Lock()
	if l.tiered.Load() && logStart >= 0 && logStart < nextOffset {
		l.remoteStart = logStart
	}
	start := l.logStartLocked()
	l.segMu.Unlock()
	l.epochs.assignAll(epochs, nextOffset)
	if err := l.epochs.truncateFromStart(start); err != nil {
		return fail(err)
	}
	if err := l.epochs.write(); err != nil {
		return fail(err)
	}
	if producerSnapshot != nil {
		if err := writeSnapshotFile(l.fsys, snapshotPath(l.dir, nextOffset), producerSnapshot, true); err != nil {
			return fail(err)
		}
		l.snapshots = []int64{nextOffset}
		if _, _, err := l.loadProducerState(noTxnIndexRebuild); err != nil {
			return fail(err)
		}
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fail(err)
	}
	l.logger.Info("rebuilt leader epochs and producer state below the local log start from remote storage", "partition", l.tp.String(),
		"log_start_offset", start, "local_log_start_offset", nextOffset, "epochs", len(l.epochs.entries),
		"producers", l.pstate.numProducers(), "producer_snapshot", producerSnapshot != nil)
	return nil
}

// assignAll replaces the entries with those of entries below end, each
// kept as Kafka's LeaderEpochFileCache.assign keeps a new entry: entries
// with a negative epoch or offset are ignored, one that repeats the
// latest epoch at a later offset changes nothing, and one whose epoch or
// offset is not above the latest's removes the entries it contradicts.
// It does not write the file.
func (c *leaderEpochCache) assignAll(entries []EpochEntry, end int64) {
	c.entries = nil
	for _, e := range entries {
		if e.Epoch < 0 || e.StartOffset < 0 || e.StartOffset >= end {
			continue
		}
		n := len(c.entries)
		if n > 0 && c.entries[n-1].Epoch == e.Epoch && e.StartOffset >= c.entries[n-1].StartOffset {
			continue
		}
		for n > 0 && (c.entries[n-1].Epoch >= e.Epoch || c.entries[n-1].StartOffset >= e.StartOffset) {
			n--
		}
		c.entries = append(c.entries[:n], e)
	}
}

// LeaderEpochEntries returns the leader-epoch cache's entries.
func (l *Log) LeaderEpochEntries() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.epochs.entries)
}
