package log

import (
	"github.com/moldau/moldau/broker/routine"

	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// logParams is what loadLog needs (Kafka's LogLoader arguments).
type logParams struct {
	dir    string
	tp     TopicPartition
	cfg    Config
	fsys   FS
	logger *slog.Logger
	now    func() time.Time
	bg     *routine.Group
	// scheduleDelete runs fn after delay; nil: run it at once.
	scheduleDelete func(delay time.Duration, fn func())

	hadCleanShutdown bool
	recoveryPoint    int64 // from the checkpoint, 0 if none
	logStartOffset   int64 // from the checkpoint, -1 if none
	highWatermark    int64 // from the checkpoint, -1 if none
	topicID          [16]byte
	// pidExpirationMs is producer.id.expiration.ms; nil: the default.
	pidExpirationMs func() int64
	// isNew: the dir did not exist (a partition created here). There is
	// nothing to recover or make durable: the empty segment is not
	// synced, and partition.metadata is written without fsync, as Kafka
	// flushes it later (a crash before then loses an empty log, which the
	// metadata creates again, or a partition.metadata that
	// GetOrCreateLog writes again).
	isNew bool
	// health is the log dir's (nil for a log outside a Manager).
	health *dirHealth
}

// LoadResult says what loading one log did.
type LoadResult struct {
	TopicPartition
	// RecoveredSegments is the number of segments scanned and checked
	// batch by batch (their indexes rebuilt).
	RecoveredSegments int
	// TruncatedBytes were dropped from the log: torn or corrupt batches
	// and the segments after them.
	TruncatedBytes int64
	// DeletedSegments were removed because they followed a truncation.
	DeletedSegments int
	// CompletedSwaps is the number of cleaned segments whose swap, cut
	// short by a crash, was completed.
	CompletedSwaps int
	// ProducerSnapshotOffset is the producer snapshot the producer state
	// was loaded from (-1: none, rebuilt from the log start), and
	// ReplayedBatches the batches read after it.
	ProducerSnapshotOffset int64
	ReplayedBatches        int
}

// loadLog opens (creating if needed) the log in p.dir, running recovery on
// the segments past the recovery point unless the last shutdown was clean
// (Kafka's LogLoader.load).
func loadLog(p logParams) (l *Log, res LoadResult, err error) {
	if p.logger == nil {
		p.logger = slog.Default()
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.fsys == nil {
		p.fsys = OSFS{}
	}
	p.cfg = p.cfg.withDefaults()
	ld := &logLoader{p: p, now: p.now()}
	ld.res.TopicPartition = p.tp
	ld.l = &Log{
		tp: p.tp, fsys: p.fsys, logger: p.logger, now: p.now, bg: p.bg,
		scheduleDelete: p.scheduleDelete, dir: p.dir, cfg: p.cfg,
		pstate: newProducerStateManager(), pidExpirationMs: p.pidExpirationMs, firstUndecided: -1,
	}
	ld.l.health.Store(p.health)
	ld.l.minISR.Store(p.cfg.MinInSyncReplicas)
	ld.l.tiered.Store(p.cfg.RemoteStorageEnable)
	ld.l.highestRemote.Store(-1)
	ld.l.remoteStart, ld.l.loadedStart = -1, -1
	if ld.l.pidExpirationMs == nil {
		ld.l.pidExpirationMs = func() int64 { return defaultPidExpirationMs }
	}
	ld.l.lastFlush = ld.now
	if err := p.fsys.MkdirAll(p.dir, 0o755); err != nil {
		return nil, ld.res, err
	}
	if err := ld.load(); err != nil {
		// The segments opened so far are closed.
		for _, s := range ld.l.segs {
			s.closeFiles()
		}
		return nil, ld.res, err
	}
	return ld.l, ld.res, nil
}

// logLoader holds one load's state between its phases (Kafka's
// LogLoader).
type logLoader struct {
	p   logParams
	now time.Time
	l   *Log
	res LoadResult
	// needRecovery[i] is whether l.segs[i] is checked batch by batch.
	needRecovery []bool
}

func (ld *logLoader) load() error {
	p := ld.p
	var err error
	// A swap of cleaned segments interrupted by a crash is completed or
	// rolled back first (Kafka's LogLoader).
	if ld.res.CompletedSwaps, err = completeInterruptedSwaps(p.fsys, p.dir, p.logger, p.tp); err != nil {
		return fmt.Errorf("completing interrupted swaps of %s: %w", p.tp, err)
	}
	bases, err := ld.scanDir()
	if err != nil {
		return err
	}
	if err := ld.openSegments(bases); err != nil {
		return err
	}
	if err := ld.recoverSegments(); err != nil {
		return err
	}
	if err := ld.dropEmptySegmentAfterGap(); err != nil {
		return err
	}
	// Non-active segments end where the next begins.
	segs := ld.l.segs
	for i := 0; i+1 < len(segs); i++ {
		if segs[i].nextOffset == segs[i].baseOffset && segs[i].size > 0 {
			segs[i].nextOffset = segs[i+1].baseOffset
		}
	}
	if err := ld.settleOffsets(); err != nil {
		return err
	}
	if err := ld.loadProducerState(); err != nil {
		return err
	}
	if err := ld.loadLeaderEpochs(); err != nil {
		return err
	}
	return ld.loadPartitionMetadata()
}

// scanDir removes the leftovers of unfinished deletes and checkpoints and
// orphan indexes, notes the producer snapshots, and returns the base
// offsets of the segments, in order.
func (ld *logLoader) scanDir() ([]int64, error) {
	p, l := ld.p, ld.l
	entries, err := p.fsys.ReadDir(p.dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	logFiles := map[int64]bool{}
	var indexFiles []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		full := filepath.Join(p.dir, name)
		switch {
		case strings.HasSuffix(name, DeletedFileSuffix), strings.HasSuffix(name, ".tmp"):
			// Leftovers of an unfinished delete or checkpoint.
			if err := p.fsys.Remove(full); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
		case strings.HasSuffix(name, LogFileSuffix):
			if off, ok := offsetFromFileName(name); ok && name == FilenamePrefixFromOffset(off)+LogFileSuffix {
				bases = append(bases, off)
				logFiles[off] = true
			}
		case strings.HasSuffix(name, IndexFileSuffix), strings.HasSuffix(name, TimeIndexFileSuffix),
			strings.HasSuffix(name, TxnIndexFileSuffix):
			indexFiles = append(indexFiles, name)
		case strings.HasSuffix(name, SnapshotFileSuffix):
			if off, ok := offsetFromFileName(name); ok && name == FilenamePrefixFromOffset(off)+SnapshotFileSuffix {
				l.snapshots = append(l.snapshots, off)
			}
		}
	}
	for _, name := range indexFiles {
		if off, ok := offsetFromFileName(name); ok && !logFiles[off] {
			// Orphan index: Kafka deletes it.
			if err := p.fsys.Remove(filepath.Join(p.dir, name)); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	slices.Sort(l.snapshots)
	return bases, nil
}

// openSegments opens the segments and marks for recovery those whose
// index is unusable and, after an unclean shutdown, every segment from
// the one holding the recovery point on.
func (ld *logLoader) openSegments(bases []int64) error {
	p, l := ld.p, ld.l
	for _, base := range bases {
		s, indexErr, err := openSegment(p.fsys, p.dir, base, p.cfg, ld.now)
		if err != nil {
			return fmt.Errorf("opening segment %d of %s: %w", base, p.tp, err)
		}
		if indexErr != nil {
			p.logger.Warn("rebuilding corrupt or missing index", "partition", p.tp.String(), "base_offset", base, "reason", indexErr)
		}
		l.segs = append(l.segs, s)
		ld.needRecovery = append(ld.needRecovery, indexErr != nil)
	}
	if !p.hadCleanShutdown && len(l.segs) > 0 {
		from := max(sort.Search(len(l.segs), func(i int) bool { return l.segs[i].baseOffset > p.recoveryPoint })-1, 0)
		for i := from; i < len(l.segs); i++ {
			ld.needRecovery[i] = true
		}
	}
	return nil
}

// recoverSegments checks the marked segments batch by batch (and the
// active one whose tail does not match its index), truncating at the
// first torn or corrupt batch and deleting every segment after it
// (Kafka's recoverLog).
func (ld *logLoader) recoverSegments() error {
	p, l := ld.p, ld.l
	for i := 0; i < len(l.segs); i++ {
		s := l.segs[i]
		last := i == len(l.segs)-1
		if !ld.needRecovery[i] {
			if !last {
				continue
			}
			err := s.loadTail()
			if err == nil {
				continue
			}
			p.logger.Warn("active segment does not match its index; recovering it", "partition", p.tp.String(), "base_offset", s.baseOffset, "err", err)
			ld.needRecovery[i] = true
		}
		truncated, err := s.recover(p.cfg.IndexIntervalBytes)
		if err != nil {
			return fmt.Errorf("recovering segment %d of %s: %w", s.baseOffset, p.tp, err)
		}
		ld.res.RecoveredSegments++
		ld.res.TruncatedBytes += truncated
		if truncated > 0 && !last {
			for _, t := range l.segs[i+1:] {
				ld.res.TruncatedBytes += t.size
				ld.res.DeletedSegments++
				if err := deleteSegmentFilesNow(p.fsys, t); err != nil {
					return err
				}
			}
			l.segs = l.segs[:i+1]
			ld.needRecovery = ld.needRecovery[:i+1]
		}
	}
	if ld.res.TruncatedBytes > 0 {
		p.logger.Warn("truncated log during recovery", "partition", p.tp.String(),
			"bytes_dropped", ld.res.TruncatedBytes, "segments_deleted", ld.res.DeletedSegments)
	}
	return nil
}

// dropEmptySegmentAfterGap deletes the empty new segments a crash can
// leave after a segment whose un-synced tail was lost: they would
// advertise offsets that hold nothing (non-empty later segments stay:
// Kafka allows offset gaps).
func (ld *logLoader) dropEmptySegmentAfterGap() error {
	p, l := ld.p, ld.l
	for n := len(l.segs); n > 1 && ld.needRecovery[n-2] && l.segs[n-1].size == 0 && l.segs[n-1].baseOffset > l.segs[n-2].nextOffset; n = len(l.segs) {
		p.logger.Warn("deleting empty segment after a gap", "partition", p.tp.String(), "base_offset", l.segs[n-1].baseOffset, "previous_end", l.segs[n-2].nextOffset)
		if err := deleteSegmentFilesNow(p.fsys, l.segs[n-1]); err != nil {
			return err
		}
		l.segs = l.segs[:n-1]
		ld.needRecovery = ld.needRecovery[:n-1]
	}
	return nil
}

// settleOffsets sets the log start, end, high watermark and recovery
// point, creating the first segment of an empty log.
func (ld *logLoader) settleOffsets() error {
	p, l := ld.p, ld.l
	logStart := p.logStartOffset
	if len(l.segs) > 0 {
		logStart = max(logStart, l.segs[0].baseOffset)
		if leo := l.segs[len(l.segs)-1].nextOffset; logStart > leo {
			// Everything was deleted (DeleteRecords past the end of what
			// survived): start over at the log start.
			p.logger.Warn("log start offset is past the log end; deleting all segments", "partition", p.tp.String(), "log_start_offset", logStart, "log_end_offset", leo)
			for _, s := range l.segs {
				if err := deleteSegmentFilesNow(p.fsys, s); err != nil {
					return err
				}
			}
			l.segs, ld.needRecovery = nil, nil
			l.resetProducerState(logStart)
		}
	}
	logStart = max(logStart, 0)
	if len(l.segs) == 0 {
		s, err := createSegment(p.fsys, p.dir, logStart, p.cfg, ld.now)
		if err != nil {
			return err
		}
		l.segs = []*Segment{s}
	} else if err := l.active().preallocateIndexes(p.cfg.SegmentIndexBytes); err != nil {
		return err
	}
	for _, s := range l.segs {
		l.size += s.size
	}
	l.leo = l.active().nextOffset
	l.logStart = logStart
	l.loadedStart, l.loadedLocal = p.logStartOffset, logStart
	if p.cfg.RemoteStorageEnable && p.logStartOffset >= 0 && p.logStartOffset < logStart {
		// The records below the first local segment are in remote
		// storage: the checkpointed log start is still the log's.
		l.remoteStart = p.logStartOffset
	}
	l.hw = min(max(p.highWatermark, logStart), l.leo)
	if p.hadCleanShutdown || p.isNew {
		l.recoveryPoint = min(p.recoveryPoint, l.leo)
		return nil
	}
	// The recovered data is checked; make it durable so the recovery
	// point can move to the end.
	for _, s := range l.segs {
		if s.nextOffset > p.recoveryPoint || s == l.active() {
			if err := s.sync(); err != nil {
				return err
			}
		}
	}
	l.recoveryPoint = l.leo
	return nil
}

// loadProducerState loads the producer state from the newest snapshot and
// the batches after it; the transaction indexes of recovered segments are
// rebuilt on the way (recovery rewrote those segments from the first one
// it checked on).
func (ld *logLoader) loadProducerState() error {
	l := ld.l
	rebuildFrom := int64(noTxnIndexRebuild)
	for i, s := range l.segs {
		if i < len(ld.needRecovery) && ld.needRecovery[i] {
			rebuildFrom = s.baseOffset
			break
		}
	}
	l.removeStraySnapshots()
	var err error
	ld.res.ProducerSnapshotOffset, ld.res.ReplayedBatches, err = l.loadProducerState(rebuildFrom)
	return err
}

// loadLeaderEpochs reads leader-epoch-checkpoint, cut to the log's range:
// at the end, the log end; at the start, the checkpointed log start (none:
// 0), not the first local offset, as Kafka's LogLoader does. A tiered
// log's start may be below its first local segment, and the log may not
// know yet that it is tiered (the broker loads its logs before it has the
// topics' configs) nor, without a checkpoint entry (a kill -9 before the
// first checkpoint after local retention), where below: the epochs down
// there are kept until the config (SetConfig) or the remote metadata
// (RestoreLogStartFromRemote) says where the log starts.
func (ld *logLoader) loadLeaderEpochs() error {
	p, l := ld.p, ld.l
	var err error
	l.epochs, err = loadLeaderEpochCache(p.fsys, p.dir)
	if err != nil {
		p.logger.Warn("ignoring malformed leader-epoch-checkpoint", "partition", p.tp.String(), "err", err)
		l.epochs.entries = nil
	}
	if err := l.epochs.truncateFromEnd(l.leo); err != nil {
		return err
	}
	return l.epochs.truncateFromStart(max(p.logStartOffset, 0))
}

// loadPartitionMetadata reads the topic id from partition.metadata,
// writing the file if it is missing and the id is known.
func (ld *logLoader) loadPartitionMetadata() error {
	p, l := ld.p, ld.l
	id, ok, err := readPartitionMetadata(p.fsys, p.dir)
	switch {
	case err != nil:
		p.logger.Warn("ignoring malformed partition.metadata", "partition", p.tp.String(), "err", err)
	case ok:
		l.topicID = id
	}
	if ok || p.topicID == ([16]byte{}) {
		return nil
	}
	write := writePartitionMetadata
	if p.isNew {
		write = writePartitionMetadataNoSync
	}
	if err := write(p.fsys, p.dir, p.topicID); err != nil {
		return err
	}
	l.topicID = p.topicID
	return nil
}

// deleteSegmentFilesNow removes a segment's files at once (load time, no
// readers).
func deleteSegmentFilesNow(fsys FS, s *Segment) error {
	errs := []error{s.closeFiles()}
	for _, path := range s.paths() {
		if err := fsys.Remove(path); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
