package log

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// What a follower replica needs from its log, named as in Kafka's
// UnifiedLog: appending batches that already carry their offsets
// (appendAsFollower), cutting the tail after a divergence (truncateTo),
// and starting over at an offset (truncateFullyAndStartAt). The metadata
// quorum (broker/raft) uses them for __cluster_metadata-0; partition
// replication will use them for follower fetches. OpenLog opens one log
// outside a Manager, as Kafka's KafkaMetadataLog opens its UnifiedLog.

// ErrUnexpectedAppendOffset is returned by AppendAsFollower when a batch
// starts below the log end offset or offsets do not increase (Kafka's
// UnexpectedAppendOffsetException); the caller must truncate first.
var ErrUnexpectedAppendOffset = errors.New("unexpected append offset")

// OpenLogParams says how to open a standalone log (Kafka's UnifiedLog.apply
// arguments). Zero values take defaults.
type OpenLogParams struct {
	Dir string // the partition dir, created if missing
	// TopicPartition names the log; zero: parsed from Dir's base name.
	TopicPartition TopicPartition
	Config         Config       // zero: DefaultConfig
	FS             FS           // nil: the OS
	Logger         *slog.Logger // nil: slog.Default()
	Now            func() time.Time
	// LogStartOffset is where a new log starts, and a floor for the log
	// start offset of an existing one (the first segment's base offset
	// otherwise).
	LogStartOffset int64
	// RecoveryPoint is the offset below which the data is known to be
	// fsynced; recovery checks every segment from the one holding it (0:
	// all of them). Ignored after a clean shutdown.
	RecoveryPoint int64
	// HadCleanShutdown skips recovery (Kafka's lastShutdownClean).
	HadCleanShutdown bool
}

// OpenLog opens (creating if needed) one log outside any Manager, running
// the same load and recovery as the Manager does for each of its logs. The
// caller owns it: it flushes, applies retention (DeleteOldSegments,
// DeleteRecordsBefore) and closes it. No goroutine is started: a rolled
// segment is fsynced by the next Flush, and deleted segment files are
// removed at once.
func OpenLog(p OpenLogParams) (*Log, LoadResult, error) {
	tp := p.TopicPartition
	if tp == (TopicPartition{}) {
		var ok bool
		if tp, ok = parseTopicPartitionDir(filepath.Base(p.Dir)); !ok {
			return nil, LoadResult{}, fmt.Errorf("log: %s is not a <topic>-<partition> dir", p.Dir)
		}
	}
	cfg := p.Config
	if cfg.SegmentBytes == 0 {
		cfg = DefaultConfig()
	}
	l, res, err := loadLog(logParams{
		dir: p.Dir, tp: tp, cfg: cfg, fsys: p.FS, logger: p.Logger, now: p.Now,
		hadCleanShutdown: p.HadCleanShutdown, recoveryPoint: p.RecoveryPoint,
		logStartOffset: max(p.LogStartOffset, 0), highWatermark: -1,
	})
	if err != nil {
		return nil, res, fmt.Errorf("%w: opening log %s: %w", kerr.KafkaStorageError, p.Dir, err)
	}
	return l, res, nil
}

// AppendAsFollower appends record batches whose offsets and leader epochs
// were assigned by the leader (Kafka's appendAsFollower): each batch's CRC
// is checked and its offsets must start at or after the log end offset and
// increase; nothing is reassigned. The leader epoch cache learns every new
// epoch. Data is not fsynced (Flush does).
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return AppendInfo{}, err
	}
	l.segMu.RLock()
	leo, logStart := l.leo, l.logStart
	l.segMu.RUnlock()
	res, headers, err := analyzeFollowerRecords(records, leo)
	if err != nil {
		return AppendInfo{}, err
	}
	info := AppendInfo{
		FirstOffset: res.FirstOffset, LastOffset: res.LastOffset, LogAppendTime: -1,
		LogStartOffset: logStart, NumRecords: res.NumRecords, ValidBytes: len(records),
		MaxTimestamp: res.MaxTimestamp,
	}
	if len(headers) == 0 {
		return info, nil
	}
	pbs, err := producerBatchesOf(&res, AppendOriginReplication)
	if err != nil {
		return AppendInfo{}, err
	}
	if _, _, err := l.pstate.prepare(pbs, AppendOriginReplication, 0, false, SentinelGuard); err != nil {
		l.pstate.abandon()
		return AppendInfo{}, err
	}
	if err := l.writeBatches(&res, l.now()); err != nil {
		l.pstate.abandon()
		return AppendInfo{}, err
	}
	if err := l.commitProducerState(l.active()); err != nil {
		return info, err
	}
	for _, h := range headers {
		if h.PartitionLeaderEpoch >= 0 && h.PartitionLeaderEpoch > l.epochs.latestEpoch() {
			if err := l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
				return info, fmt.Errorf("%w: writing leader-epoch-checkpoint of %s: %w", kerr.KafkaStorageError, l.tp, err)
			}
		}
	}
	return info, nil
}

// analyzeFollowerRecords checks batches appended as a follower and
// describes them as ValidateAndAssignOffsets would.
func analyzeFollowerRecords(records []byte, leo int64) (ValidationResult, []BatchHeader, error) {
	res := ValidationResult{Records: records, FirstOffset: -1, LastOffset: -1, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, LogAppendTime: -1}
	var headers []BatchHeader
	next := leo
	for pos := 0; pos < len(records); {
		if len(records)-pos < BatchHeaderSize {
			return res, nil, fmt.Errorf("%w: %d trailing bytes after the last whole batch", kerr.CorruptMessage, len(records)-pos)
		}
		h, err := ParseBatchHeader(records[pos:])
		if err != nil {
			return res, nil, err
		}
		size := h.TotalSize()
		if pos+size > len(records) {
			return res, nil, fmt.Errorf("%w: batch at %d claims %d bytes, %d present", kerr.CorruptMessage, h.BaseOffset, size, len(records)-pos)
		}
		if _, err := CheckBatch(records[pos : pos+size]); err != nil {
			return res, nil, err
		}
		if h.BaseOffset < next || h.LastOffsetDelta < 0 {
			return res, nil, fmt.Errorf("%w: batch [%d, %d] does not start at or after offset %d", ErrUnexpectedAppendOffset, h.BaseOffset, h.LastOffset(), next)
		}
		if res.FirstOffset < 0 {
			res.FirstOffset = h.BaseOffset
		}
		res.LastOffset = h.LastOffset()
		if h.MaxTimestamp > res.MaxTimestamp {
			res.MaxTimestamp, res.OffsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		res.NumRecords += int(h.NumRecords)
		res.Batches = append(res.Batches, ValidatedBatch{
			Pos: pos, Size: size, BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(),
			MaxTimestamp: h.MaxTimestamp, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
			BaseSequence: h.BaseSequence, LastSequence: lastSequence(h.BaseSequence, h.LastOffsetDelta),
			Transactional: h.IsTransactional(), Control: h.IsControl(),
		})
		headers = append(headers, h)
		next = h.NextOffset()
		pos += size
	}
	return res, headers, nil
}

// writeBatches writes res.Records at the end of the active segment (rolling
// first if needed) and publishes the new size, indexes and log end offset;
// l.mu held. It is the write half of appendLocked, for batches whose
// offsets are already set.
func (l *Log) writeBatches(res *ValidationResult, now time.Time) error {
	if len(res.Records) > int(l.cfg.SegmentBytes) {
		return fmt.Errorf("%w: %d bytes of batches exceed segment.bytes %d", kerr.RecordListTooLarge, len(res.Records), l.cfg.SegmentBytes)
	}
	seg := l.active()
	if l.shouldRoll(seg, res, now) {
		var err error
		if seg, err = l.roll(now); err != nil {
			return err
		}
	}
	pos := seg.size
	if n, err := seg.log.WriteAt(res.Records, pos); err != nil {
		if n > 0 {
			if terr := seg.log.Truncate(pos); terr != nil {
				l.failed = errors.Join(err, terr)
			}
		}
		return fmt.Errorf("%w: appending to %s: %w", kerr.KafkaStorageError, seg.logPath(), err)
	}
	interval := l.cfg.IndexIntervalBytes
	l.segMu.Lock()
	for i := range res.Batches {
		b := &res.Batches[i]
		seg.indexBatch(b.LastOffset, b.MaxTimestamp, pos+int64(b.Pos), b.Size, interval)
	}
	seg.size += int64(len(res.Records))
	seg.nextOffset = res.LastOffset + 1
	l.size += int64(len(res.Records))
	l.leo = res.LastOffset + 1
	l.segMu.Unlock()
	return nil
}

// TruncateTo removes every batch whose last offset is >= targetOffset
// (Kafka's truncateTo, after a follower found its log diverging from the
// leader's). A batch holding targetOffset goes whole, so the new log end
// offset is the base offset of the first batch removed, or targetOffset
// if the data ends before it. A target below the log start offset empties
// the log (TruncateFullyAndStartAt). It reports whether anything changed.
// The high watermark and recovery point are lowered to the new end.
func (l *Log) TruncateTo(targetOffset int64) (bool, error) {
	if targetOffset < 0 {
		return false, fmt.Errorf("log: cannot truncate %s to negative offset %d", l.tp, targetOffset)
	}
	unlock, err := l.lockForTruncation()
	if err != nil {
		return false, err
	}
	defer unlock()
	l.segMu.RLock()
	leo, logStart := l.leo, l.logStart
	i := l.segmentFloor(targetOffset)
	l.segMu.RUnlock()
	if targetOffset >= leo {
		return false, nil
	}
	if targetOffset < logStart || i < 0 {
		return true, l.truncateFullyAndStartAt(targetOffset)
	}
	seg := l.segs[i]
	buf := make([]byte, BatchHeaderSize)
	pos, h, found, err := seg.findBatch(targetOffset, int64(seg.offIdx.Lookup(targetOffset).Position), seg.size, buf)
	if err != nil {
		return false, fmt.Errorf("%w: truncating %s: %w", kerr.KafkaStorageError, l.tp, err)
	}
	newLeo := targetOffset
	if found {
		newLeo = h.BaseOffset
	} else {
		pos = seg.size
	}
	if pos < seg.size {
		if err := seg.log.Truncate(pos); err != nil {
			l.failed = err
			return false, fmt.Errorf("%w: truncating %s: %w", kerr.KafkaStorageError, seg.logPath(), err)
		}
	}
	l.segMu.Lock()
	doomed := append([]*Segment(nil), l.segs[i+1:]...)
	l.segs = l.segs[:i+1]
	removed := seg.size - pos
	for _, s := range doomed {
		removed += s.size
	}
	seg.truncateInMemory(pos, newLeo)
	keepTxns := seg.truncateTxnIndex(newLeo)
	l.size -= removed
	l.leo = newLeo
	l.hw = min(l.hw, newLeo)
	// Positions cached for offsets at or past the cut may be re-used by
	// other batches: forget them.
	l.hwMeta.Store(nil)
	l.lsoMeta.Store(nil)
	l.segMu.Unlock()
	l.recoveryPoint = min(l.recoveryPoint, newLeo)
	l.noteTruncation(newLeo)
	l.truncateFuture(newLeo, false)

	errs := []error{seg.truncateTxnIndexFile(keepTxns)}
	for _, s := range doomed {
		if err := l.asyncDeleteSegment(s); err != nil {
			errs = append(errs, err)
		}
	}
	// The kept segment is the active one again: its index files are
	// rewritten from the kept entries, preallocated.
	seg.offIdx.written, seg.timeIdx.written = 0, 0
	if err := seg.preallocateIndexes(l.cfg.SegmentIndexBytes); err != nil {
		errs = append(errs, err)
	} else if err := seg.flushIndexes(); err != nil {
		errs = append(errs, err)
	}
	if err := l.epochs.truncateFromEnd(newLeo); err != nil {
		errs = append(errs, err)
	}
	// Kafka's rebuildProducerState(targetOffset): snapshots past the new
	// end go, the state is reloaded from the newest one left.
	if _, _, err := l.loadProducerState(noTxnIndexRebuild); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		l.failed = err
		return true, fmt.Errorf("%w: truncating %s: %w", kerr.KafkaStorageError, l.tp, err)
	}
	l.logger.Info("truncated log", "partition", l.tp.String(), "target_offset", targetOffset, "log_end_offset", newLeo, "bytes_removed", removed)
	return true, nil
}

// truncateInMemory drops the segment's data from pos on and the index
// entries pointing there; Log.segMu held.
func (s *Segment) truncateInMemory(pos, nextOffset int64) {
	n := sort.Search(len(s.offIdx.entries), func(i int) bool { return int64(s.offIdx.entries[i].pos) >= pos })
	s.offIdx.truncateToEntries(n)
	s.timeIdx.truncateTo(nextOffset)
	s.size, s.nextOffset = pos, nextOffset
	s.bytesSinceLastIndexEntry = 0
	s.maxTs, s.offsetOfMaxTs = -1, s.baseOffset
	if last := s.timeIdx.LastEntry(); last.Timestamp >= 0 {
		s.maxTs, s.offsetOfMaxTs = last.Timestamp, last.Offset
	}
	if s.size == 0 {
		s.firstBatchTs = -1
	}
}

// TruncateFullyAndStartAt deletes every segment and starts the log over,
// empty, at newOffset (Kafka's truncateFullyAndStartAt: a follower whose
// leader's log starts past its end, or a quorum member that installed a
// snapshot). Log start, log end, high watermark and recovery point all
// become newOffset; the leader epoch cache and producer state are cleared.
func (l *Log) TruncateFullyAndStartAt(newOffset int64) error {
	if newOffset < 0 {
		return fmt.Errorf("log: cannot start %s at negative offset %d", l.tp, newOffset)
	}
	unlock, err := l.lockForTruncation()
	if err != nil {
		return err
	}
	defer unlock()
	return l.truncateFullyAndStartAt(newOffset)
}

// lockForTruncation takes the locks a truncation holds, replaceMu (not
// during a cleaner's swap) then mu, if the log is usable; unlock releases
// them.
func (l *Log) lockForTruncation() (unlock func(), err error) {
	l.replaceMu.Lock()
	l.mu.Lock()
	unlock = func() {
		l.mu.Unlock()
		l.replaceMu.Unlock()
	}
	if err := l.usable(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// truncateFullyAndStartAt is TruncateFullyAndStartAt with l.mu held. The
// old files are renamed .deleted before the new segment is created, so a
// new segment with an old one's base offset does not clash with it.
func (l *Log) truncateFullyAndStartAt(newOffset int64) error {
	l.segMu.RLock()
	old := append([]*Segment(nil), l.segs...)
	l.segMu.RUnlock()
	fail := func(err error) error {
		l.failed = err
		return fmt.Errorf("%w: truncating %s fully: %w", kerr.KafkaStorageError, l.tp, err)
	}
	for _, s := range old {
		if err := s.renameDeleted(); err != nil {
			return fail(err)
		}
	}
	seg, err := createSegment(l.fsys, l.dir, newOffset, l.cfg, l.now())
	if err != nil {
		return fail(err)
	}
	l.segMu.Lock()
	l.segs = []*Segment{seg}
	l.size = 0
	l.leo, l.logStart, l.hw = newOffset, newOffset, newOffset
	l.remoteStart = -1
	l.segMu.Unlock()
	l.recoveryPoint = newOffset
	l.noteTruncation(newOffset)
	l.truncateFuture(newOffset, true)
	l.resetProducerState(newOffset)
	for _, s := range old {
		del := func() {
			if err := s.deleteFiles(); err != nil {
				l.logger.Warn("removing deleted segment failed", "partition", l.tp.String(), "base_offset", s.baseOffset, "err", err)
			}
		}
		if l.scheduleDelete != nil {
			l.scheduleDelete(time.Duration(l.cfg.FileDeleteDelayMs)*time.Millisecond, del)
		} else {
			del()
		}
	}
	l.epochs.entries = nil
	if err := l.epochs.write(); err != nil {
		return fail(err)
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fail(err)
	}
	l.logger.Info("truncated log fully", "partition", l.tp.String(), "log_start_offset", newOffset, "segments_deleted", len(old))
	return nil
}
