package log

import (
	"github.com/moldau/moldau/broker/routine"

	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String is Kafka's "topic-partition".
func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Log is one partition's log (Kafka's UnifiedLog): an ordered list of
// segments, the last one active (appended to).
//
// Locks (see doc.go): mu serialises writers (Append, roll, flush
// bookkeeping, retention, config); segMu guards what readers see (the
// segment list, each segment's committed size and in-memory indexes, log
// start, log end, high watermark, size). Order: mu before segMu. Readers
// take only segMu.RLock, briefly, and do their I/O without locks.
type Log struct {
	// minISR mirrors cfg.MinInSyncReplicas; tiered
	// cfg.RemoteStorageEnable.
	minISR atomic.Int32
	tiered atomic.Bool
	// highestRemote is the highest offset copied to remote storage (-1:
	// none), set by the RemoteLogManager (tiered.go).
	highestRemote atomic.Int64
	tp            TopicPartition
	fsys          FS
	logger        *slog.Logger
	now           func() time.Time
	bg            *routine.Group
	// scheduleDelete runs fn after delay (file.delete.delay.ms); nil: now.
	scheduleDelete func(delay time.Duration, fn func())
	// health is the log dir's: once it failed the log is offline (see
	// dir_failure.go). Nil outside a Manager. Atomic: moving the log to
	// another dir (future.go) changes it while Offline reads it unlocked.
	health atomic.Pointer[dirHealth]

	// replaceMu serialises what replaces or removes non-active segments:
	// the cleaner's swap (replaceSegments), retention, DeleteRecords,
	// truncation, Close. It is taken before mu and held across the
	// cleaner's file renames, which mu (needed by appends) never is.
	replaceMu sync.Mutex
	// pathMu is read-held by whatever opens segment files by path
	// without mu (the fsyncs of flushTo), write-held by a move between
	// log dirs while it changes the segments' paths (future.go). Taken
	// under mu, or with no lock.
	pathMu sync.RWMutex

	mu      sync.Mutex
	dir     string // partition dir; also read under segMu
	cfg     Config
	topicID [16]byte
	pstate  producerStateManager
	// snapshots are the offsets of the producer snapshot files, sorted;
	// lastSnap the newest offset state was written or loaded at (Kafka's
	// lastSnapOffset).
	snapshots []int64
	lastSnap  int64
	// pidExpirationMs is producer.id.expiration.ms (read when used: it
	// is a dynamic broker config).
	pidExpirationMs func() int64
	epochs          *leaderEpochCache
	recoveryPoint   int64
	lastFlush       time.Time
	failed          error // set after an I/O error that left the log unusable
	closed          bool
	deleted         bool
	// truncatedTo is the lowest offset the log was truncated to since
	// the cleaner last looked (if truncated), so the cleaner lowers its
	// checkpoint (see noteTruncation).
	truncatedTo int64
	truncated   bool
	// future is the copy being made in another log dir (future.go), nil
	// if the log is not being moved.
	future *futureLog

	segMu sync.RWMutex
	segs  []*Segment
	leo   int64
	// logStart is the local log start offset (Kafka's
	// localLogStartOffset): the first offset on this broker's disk.
	// remoteStart, when not -1, is the log start offset below it, of a
	// tiered log whose oldest records are only in remote storage
	// (tiered.go); LogStartOffset is then remoteStart.
	logStart    int64
	remoteStart int64
	// loadedStart is the log start offset the checkpoint had at load
	// (-1: none) and loadedLocal the local start then, kept so a log
	// loaded before its config said tiered (the broker loads logs before
	// it has the topics' configs) gets its start below the local one
	// when SetConfig says so, unless its local start moved since (then
	// the checkpoint's start is not a remote one). segMu.
	loadedStart, loadedLocal int64
	hw                       int64
	size                     int64
	// hwMeta caches the high watermark's position when it is below
	// the log end (see FetchOffsetSnapshot); lsoMeta the last stable
	// offset's when it is below the high watermark.
	hwMeta  hwMetaPtr
	lsoMeta hwMetaPtr
	// firstUndecided is the first offset of the earliest open
	// transaction (-1: none), published from the producer state after
	// each append; unreplicated are completed transactions whose marker
	// is not yet below the high watermark (Kafka's unreplicatedTxns),
	// by first offset. Together they give the last stable offset.
	firstUndecided int64
	unreplicated   []completedTxn
	// corrupt are the batches the scrubber found damaged (scrubber.go).
	corrupt atomic.Pointer[[]CorruptBatch]
}

// TopicPartition returns the partition.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir returns the partition's directory.
func (l *Log) Dir() string {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.dir
}

// TopicID returns the topic ID stored in partition.metadata (zero if none).
func (l *Log) TopicID() [16]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.topicID
}

// Config returns the log's config.
func (l *Log) Config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}

// SetConfig changes the log's config (AlterConfigs on its topic). A new
// segment.index.bytes applies to segments created after.
func (l *Log) SetConfig(cfg Config) {
	l.mu.Lock()
	l.cfg = cfg.withDefaults()
	l.minISR.Store(l.cfg.MinInSyncReplicas)
	wasTiered := l.tiered.Swap(l.cfg.RemoteStorageEnable)
	if !wasTiered && l.cfg.RemoteStorageEnable {
		l.segMu.Lock()
		if l.remoteStart < 0 && l.loadedStart >= 0 && l.loadedStart < l.logStart && l.logStart == l.loadedLocal {
			l.remoteStart = l.loadedStart
		}
		l.segMu.Unlock()
	}
	if wasTiered && !l.cfg.RemoteStorageEnable {
		// Tiering turned off (remote.log.delete.on.disable): the remote
		// data goes, and the log starts at its local start.
		l.segMu.Lock()
		l.remoteStart = -1
		l.highestRemote.Store(-1)
		l.segMu.Unlock()
	}
	if !l.cfg.RemoteStorageEnable {
		// A log that is not tiered starts at its first local offset:
		// the leader epochs below it, kept at load in case the log
		// was tiered (loadLeaderEpochs), go.
		l.truncateEpochsToLogStartLocked()
	}
	l.mu.Unlock()
}

// truncateEpochsToLogStartLocked drops the leader epochs wholly below the
// log start; mu held.
func (l *Log) truncateEpochsToLogStartLocked() {
	l.segMu.RLock()
	start := l.logStartLocked()
	l.segMu.RUnlock()
	if err := l.epochs.truncateFromStart(start); err != nil {
		l.logger.Warn("writing leader-epoch-checkpoint failed", "partition", l.tp.String(), "err", err)
	}
}

// MinInSyncReplicas is the config's min.insync.replicas, read without the
// log's lock (the leader reads it at every high watermark update).
func (l *Log) MinInSyncReplicas() int32 { return l.minISR.Load() }

// HighWatermark returns the high watermark.
func (l *Log) HighWatermark() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.hw
}

// UpdateHighWatermark sets the high watermark, clamped to [log start, log
// end], and returns it.
func (l *Log) UpdateHighWatermark(hw int64) int64 {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	hw = min(max(hw, l.logStart), l.leo)
	l.hw = hw
	l.pruneUnreplicatedLocked(hw)
	return hw
}

// LogStartOffset returns the log start offset (Kafka's logStartOffset):
// the first offset a consumer may read, which for a tiered log may be in
// remote storage only (see LocalLogStartOffset).
func (l *Log) LogStartOffset() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.logStartLocked()
}

// LocalLogStartOffset returns the first offset on local disk (Kafka's
// localLogStartOffset); it is the log start offset unless the log is
// tiered.
func (l *Log) LocalLogStartOffset() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.logStart
}

// LogEndOffset returns the log end offset (the next offset to assign).
func (l *Log) LogEndOffset() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.leo
}

// Size returns the log's size in bytes.
func (l *Log) Size() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.size
}

// NumSegments returns the number of segments.
func (l *Log) NumSegments() int {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return len(l.segs)
}

// RecoveryPoint returns the offset below which everything was fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recoveryPoint
}

// SegmentBaseOffsets returns the base offsets of the segments, in order.
func (l *Log) SegmentBaseOffsets() []int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	out := make([]int64, len(l.segs))
	for i, s := range l.segs {
		out[i] = s.baseOffset
	}
	return out
}

// LatestEpoch returns the latest leader epoch in the log, or -1.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.latestEpoch()
}

func (l *Log) active() *Segment { return l.segs[len(l.segs)-1] }

// usable returns an error if the log cannot be written.
func (l *Log) usable() error {
	if err := l.Offline(); err != nil {
		return err
	}
	switch {
	case l.deleted:
		return fmt.Errorf("%w: log %s was deleted", kerr.UnknownTopicOrPartition, l.tp)
	case l.closed:
		return fmt.Errorf("%w: log %s is closed", kerr.NotLeaderForPartition, l.tp)
	case l.failed != nil:
		return fmt.Errorf("%w: log %s is offline after an I/O error: %v", kerr.KafkaStorageError, l.tp, l.failed)
	}
	return nil
}

// AppendInfo describes an append.
type AppendInfo struct {
	FirstOffset    int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless LogAppendTime
	LogStartOffset int64
	NumRecords     int
	ValidBytes     int
	MaxTimestamp   int64
	// Duplicate: the batch was a retry of one already in the log
	// (idempotent producer); the offsets are the original batch's.
	Duplicate bool
}

// Append validates records (one magic-v2 batch, as a producer sent it),
// assigns offsets and appends them: Kafka's appendAsLeader with
// AppendOrigin.CLIENT. The high watermark is not moved: the caller does
// (UpdateHighWatermark).
func (l *Log) Append(records []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.AppendAsLeader(records, leaderEpoch, AppendOptions{Origin: AppendOriginClient})
}

// AppendOptions are the arguments of AppendAsLeader besides the records
// (Kafka's appendAsLeader origin and transactionVersion).
type AppendOptions struct {
	// Origin decides the checks: AppendOriginClient (Produce) or
	// AppendOriginCoordinator (transaction markers and coordinator
	// records, which may be control batches).
	Origin AppendOrigin
	// TransactionVersion is the transaction version of a marker
	// (WriteTxnMarkers v2, KIP-1228): from 2 a marker must carry an epoch
	// newer than the producer's. 0 for the classic protocol.
	TransactionVersion int16
	// VerifyTransaction: the append's transactional batches were verified
	// with the transaction coordinator, and one that opens a transaction
	// must bring VerificationGuard, the guard that
	// MaybeStartTransactionVerification gave (Kafka's
	// requestVerificationGuard; verification.go).
	VerifyTransaction bool
	VerificationGuard VerificationGuard
}

// AppendAsLeader validates records, assigns offsets and appends them as
// the partition's leader (Kafka's appendAsLeader). A COMMIT or ABORT
// marker (AppendOriginCoordinator only) completes its producer's
// transaction: an ABORT is recorded in the segment's transaction index,
// and the last stable offset moves.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32, opts AppendOptions) (AppendInfo, error) {
	if opts.Origin == AppendOriginReplication {
		return AppendInfo{}, fmt.Errorf("log: AppendAsLeader of %s with origin %s (use AppendAsFollower)", l.tp, opts.Origin)
	}
	l.mu.Lock()
	info, flush, err := l.appendLocked(records, leaderEpoch, opts)
	l.mu.Unlock()
	if err == nil && flush {
		if ferr := l.Flush(); ferr != nil {
			l.logger.Warn("flush after flush.messages failed", "partition", l.tp.String(), "err", ferr)
		}
	}
	return info, err
}

func (l *Log) appendLocked(records []byte, leaderEpoch int32, opts AppendOptions) (AppendInfo, bool, error) {
	if err := l.usable(); err != nil {
		return AppendInfo{}, false, err
	}
	now := l.now()
	l.segMu.RLock()
	leo, logStart := l.leo, l.logStart
	l.segMu.RUnlock()
	res, err := validateAndAssignOffsets(records, leo, leaderEpoch, now, l.cfg, opts.Origin)
	if err != nil {
		return AppendInfo{}, false, err
	}
	info := AppendInfo{
		FirstOffset: res.FirstOffset, LastOffset: res.LastOffset, LogAppendTime: res.LogAppendTime,
		LogStartOffset: logStart, NumRecords: res.NumRecords, ValidBytes: len(res.Records),
		MaxTimestamp: res.MaxTimestamp,
	}
	if len(res.Records) == 0 || len(res.Batches) == 0 {
		return info, false, nil
	}
	pbs, err := producerBatchesOf(&res, opts.Origin)
	if err != nil {
		return AppendInfo{}, false, err
	}
	if dup, ok, err := l.pstate.prepare(pbs, opts.Origin, opts.TransactionVersion, opts.VerifyTransaction, opts.VerificationGuard); err != nil {
		l.pstate.abandon()
		return AppendInfo{}, false, err
	} else if ok {
		l.pstate.abandon()
		return AppendInfo{
			FirstOffset: dup.firstOffset, LastOffset: dup.lastOffset, LogAppendTime: -1,
			LogStartOffset: logStart, NumRecords: int(dup.lastOffset - dup.firstOffset + 1),
			MaxTimestamp: dup.timestamp, Duplicate: true,
		}, false, nil
	}
	if err := l.writeBatches(&res, now); err != nil {
		l.pstate.abandon()
		return AppendInfo{}, false, err
	}
	if err := l.commitProducerState(l.active()); err != nil {
		return info, false, err
	}
	if leaderEpoch >= 0 && leaderEpoch > l.epochs.latestEpoch() {
		if err := l.epochs.assign(leaderEpoch, res.FirstOffset); err != nil {
			l.logger.Warn("writing leader-epoch-checkpoint failed", "partition", l.tp.String(), "err", err)
		}
	}
	flush := l.cfg.FlushIntervalMessages < math.MaxInt64 && res.LastOffset+1-l.recoveryPoint >= l.cfg.FlushIntervalMessages
	return info, flush, nil
}

// shouldRoll is Kafka's LogSegment.shouldRoll.
func (l *Log) shouldRoll(seg *Segment, res *ValidationResult, now time.Time) bool {
	if seg.size == 0 {
		return false // never roll an empty segment
	}
	size := int64(len(res.Records))
	if seg.size > int64(l.cfg.SegmentBytes)-size {
		return true
	}
	if seg.offIdx.IsFull() || seg.timeIdx.IsFull() {
		return true
	}
	if res.LastOffset-seg.baseOffset > math.MaxInt32 {
		return true
	}
	// time waited: by the first batch's timestamp if it has one, else by
	// the segment's creation time.
	var waited int64
	if seg.firstBatchTs >= 0 {
		waited = res.MaxTimestamp - seg.firstBatchTs
	} else {
		waited = now.Sub(seg.created).Milliseconds()
	}
	return waited > l.cfg.SegmentMs-seg.rollJitterMs
}

// Roll closes the active segment to appends and starts a new one at the log
// end, unless the active segment is empty.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	_, err := l.roll(l.now())
	return err
}

// roll starts a new segment at the log end; l.mu held.
func (l *Log) roll(now time.Time) (*Segment, error) {
	old := l.active()
	if old.size == 0 {
		return old, nil
	}
	l.segMu.Lock()
	old.finalTimeIndexEntry()
	base := l.leo
	l.segMu.Unlock()
	if err := old.trimIndexes(); err != nil {
		return nil, fmt.Errorf("%w: trimming indexes of %s: %w", kerr.KafkaStorageError, old.logPath(), err)
	}
	seg, err := createSegment(l.fsys, l.dir, base, l.cfg, now)
	if err != nil {
		return nil, fmt.Errorf("%w: rolling %s: %w", kerr.KafkaStorageError, l.tp, err)
	}
	l.segMu.Lock()
	l.segs = append(l.segs, seg)
	l.segMu.Unlock()
	l.logger.Debug("rolled segment", "partition", l.tp.String(), "base_offset", base)
	// A producer snapshot at the new segment's base (Kafka's roll), so
	// that recovery can start there; fsynced with the old segment by the
	// flush below. Without it a restart scans further back: not fatal.
	if _, err := l.takeSnapshotAt(base, false); err != nil {
		l.logger.Warn("producer snapshot at roll failed", "partition", l.tp.String(), "err", err)
	}
	// Flush the old segment in the background, as Kafka schedules it.
	if l.bg != nil {
		l.bg.Go(func(<-chan struct{}) {
			if err := l.flushTo(base); err != nil {
				l.logger.Warn("flush after roll failed", "partition", l.tp.String(), "err", err)
			}
		})
	}
	return seg, nil
}

// Flush fsyncs everything up to the log end and moves the recovery point.
func (l *Log) Flush() error {
	return l.flushTo(l.LogEndOffset())
}

// flushTo fsyncs the segments holding offsets below offset and moves the
// recovery point there (Kafka's flush(offset)). The fsyncs run without
// locks.
func (l *Log) flushTo(offset int64) error {
	l.mu.Lock()
	if offset <= l.recoveryPoint || l.closed {
		l.mu.Unlock()
		return nil
	}
	var todo []*Segment
	var errs []error
	var snaps []string // producer snapshots written since the last flush
	for _, off := range l.snapshots {
		if off > l.recoveryPoint && off <= offset {
			snaps = append(snaps, snapshotPath(l.dir, off))
		}
	}
	for _, s := range l.segs {
		if s.baseOffset >= offset {
			break
		}
		if s.nextOffset > l.recoveryPoint || s == l.active() {
			if err := s.flushIndexes(); err != nil {
				errs = append(errs, err)
			}
			todo = append(todo, s)
		}
	}
	l.pathMu.RLock()
	l.mu.Unlock()
	for _, s := range todo {
		if err := s.sync(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, path := range snaps {
		if err := withExistingIndexFile(l.fsys, path, File.Sync); err != nil {
			errs = append(errs, err)
		}
	}
	l.pathMu.RUnlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: flushing %s: %w", kerr.KafkaStorageError, l.tp, err)
	}
	l.mu.Lock()
	if offset > l.recoveryPoint {
		l.recoveryPoint = offset
	}
	l.lastFlush = l.now()
	l.mu.Unlock()
	return nil
}

// timeSinceLastFlush is used by the flush scheduler (flush.ms).
func (l *Log) timeSinceLastFlush(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return now.Sub(l.lastFlush)
}

// Close trims the indexes and closes the files. It does not fsync (the
// Manager flushes first). Idempotent.
func (l *Log) Close() error {
	l.replaceMu.Lock()
	defer l.replaceMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	if !l.deleted && l.failed == nil {
		// A snapshot at the log end, so the next start replays nothing
		// (Kafka's close takes one).
		if _, err := l.takeSnapshotAt(l.leo, true); err != nil {
			errs = append(errs, err)
		}
	}
	l.segMu.Lock()
	segs := l.segs
	if len(segs) > 0 {
		segs[len(segs)-1].finalTimeIndexEntry()
	}
	l.segMu.Unlock()
	for i, s := range segs {
		if !l.deleted && l.failed == nil && l.Offline() == nil {
			if err := s.trimIndexes(); err != nil {
				errs = append(errs, err)
			}
			if i == len(segs)-1 {
				// The active segment's indexes changed since the last
				// flush (final time index entry, trim): make them durable
				// before the clean shutdown marker is written.
				for _, path := range []string{s.offIdx.path, s.timeIdx.path} {
					if err := withExistingIndexFile(s.fsys, path, File.Sync); err != nil {
						errs = append(errs, err)
					}
				}
			}
			// Drop anything past the committed size (a failed write).
			if st, err := s.log.Stat(); err == nil && st.Size() > s.size {
				if err := s.log.Truncate(s.size); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if err := s.closeFiles(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// segmentFloor returns the index of the last segment whose base offset is
// <= offset, or -1. segMu held.
func (l *Log) segmentFloor(offset int64) int {
	return sort.Search(len(l.segs), func(i int) bool { return l.segs[i].baseOffset > offset }) - 1
}
