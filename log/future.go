package log

// Moving a replica between the log dirs of this broker (KIP-113, Kafka's
// AlterReplicaLogDirs): the partition's "future" log is made in the target
// dir as "<topic>-<partition>.<uuid>-future" and filled by a copier that
// reads the current log as a follower fetches from its leader and appends
// the batches as they are (Kafka's ReplicaAlterLogDirsThread). The current
// log keeps serving produce and fetch meanwhile. Every truncation of the
// current log truncates the future log in the same critical section, and
// bumps a generation the copier checks before it appends what it read, so
// the future never holds batches the current log has dropped.
//
// Once the future log has the current log's end offset, the copier swaps
// them (Kafka's replaceCurrentWithFutureLog) holding the current log's
// replaceMu and mu, which every writer takes (leader and follower appends,
// truncation, retention, the cleaner's swap): nothing can be appended
// between the check and the swap. The swap fsyncs the future log, renames
// the current dir "<topic>-<partition>.<uuid>-delete", renames the future
// dir "<topic>-<partition>", and then hands the future's segments, leader
// epochs and producer snapshots to the *Log the replica layer holds: the
// same *Log keeps serving, now from the new dir, with its offsets, high
// watermark and producer state unchanged. The old segments are closed and
// removed after file.delete.delay.ms, as a deleted log's are, so that
// reads in flight finish.
//
// Crash safety, at start-up (settleFutureDirs): a "-future" dir whose
// current log exists was a copy in progress: once the manager starts, it
// is loaded with a full recovery (every batch's CRC checked, a torn tail
// cut) and cut back to where it agrees with the current log by their
// leader epochs, as Kafka's ReplicaAlterLogDirsThread truncates a future
// replica (Kafka's OffsetForLeaderEpoch against the current log), and the
// copy resumes from its end; if it cannot be loaded it is removed and the
// move starts over. A "-future" dir
// without a current log was renamed by a swap that crashed between its two
// renames, after the future was complete and fsynced: it is promoted to the
// partition's log. A "-future" dir is never loaded as a partition's log
// otherwise.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// FutureDirSuffix ends the dir of a log being moved between log dirs.
const FutureDirSuffix = "-future"

// futureCopyChunk is how much the copier reads at a time (Kafka's
// replica.fetch.max.bytes default).
const futureCopyChunk = 1 << 20

// errMoveAborted stops a copier whose move was cancelled or superseded.
var errMoveAborted = errors.New("log: move between log dirs aborted")

// futureLog is a log being filled in another log dir.
type futureLog struct {
	log    *Log
	parent string // the log dir it is in
	// mu orders the copier's appends with truncations of the current
	// log; gen counts those truncations and failed is set if truncating
	// the future failed. Lock order: current Log.mu before mu before the
	// future Log's locks.
	mu     sync.Mutex
	gen    uint64
	failed error
	stop   chan struct{}
	once   sync.Once
}

func (f *futureLog) cancel() { f.once.Do(func() { close(f.stop) }) }

// randomHex is 32 hex digits, for "-delete" and "-future" dir names.
func randomHex() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}

// parseFutureDir returns the partition of a "<topic>-<partition>.<id>-future"
// dir name.
func parseFutureDir(name string) (TopicPartition, bool) {
	base, ok := strings.CutSuffix(name, FutureDirSuffix)
	if !ok {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(base, '.')
	if i <= 0 {
		return TopicPartition{}, false
	}
	return parseTopicPartitionDir(base[:i])
}

// setDir points the segment's paths at dir after its directory was renamed;
// the open files are unaffected.
func (s *Segment) setDir(dir string) {
	s.dir = dir
	s.offIdx.path = segmentPath(dir, s.baseOffset, IndexFileSuffix)
	s.timeIdx.path = segmentPath(dir, s.baseOffset, TimeIndexFileSuffix)
}

// FutureInfo describes a log's move in progress: the log dir it goes to,
// the future log's size and how far its end is behind the current log's.
func (l *Log) FutureInfo() (dir string, size, lag int64, ok bool) {
	l.mu.Lock()
	f := l.future
	l.mu.Unlock()
	if f == nil {
		return "", 0, 0, false
	}
	lag = max(l.LogEndOffset()-f.log.LogEndOffset(), 0)
	return f.parent, f.log.Size(), lag, true
}

// activeBaseOffset is the base offset of the active segment.
func (l *Log) activeBaseOffset() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	if len(l.segs) == 0 {
		return -1
	}
	return l.active().baseOffset
}

// truncateFuture applies a truncation of the current log to its future
// log; l.mu (and l.replaceMu) held.
func (l *Log) truncateFuture(offset int64, fully bool) {
	f := l.future
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	var err error
	if fully {
		err = f.log.TruncateFullyAndStartAt(offset)
	} else if f.log.LogEndOffset() > offset {
		_, err = f.log.TruncateTo(offset)
	}
	if err != nil && f.failed == nil {
		f.failed = err
	}
}

// logDirFor returns the configured log dir at path.
// (AlterReplicaLogDirs names dirs by absolute path.)
func (m *Manager) logDirFor(path string) *logDir {
	path = filepath.Clean(path)
	abs, _ := filepath.Abs(path)
	for _, d := range m.dirs {
		if d.path == path {
			return d
		}
		if da, err := filepath.Abs(d.path); err == nil && da == abs {
			return d
		}
	}
	return nil
}

// AlterLogDir moves tp's log to the log dir at path (Kafka's
// ReplicaManager.alterReplicaLogDirs for one partition). A path that is not
// a configured log dir: kerr.LogDirNotFound; an offline one:
// kerr.KafkaStorageError. With no log for tp the dir is remembered for when
// the log is created (Kafka's preferred log dir) and the answer is
// kerr.ReplicaNotAvailable. A log already in that dir: nil (a move
// elsewhere in progress is cancelled). Otherwise a future log is made there
// and copied to in the background; nil means the move started (or was
// already under way).
func (m *Manager) AlterLogDir(tp TopicPartition, path string) error {
	d := m.logDirFor(path)
	if d == nil {
		return fmt.Errorf("%w: log dir %s is not in log.dirs", kerr.LogDirNotFound, path)
	}
	if err := d.failed(); err != nil {
		return fmt.Errorf("%w: log dir %s is offline", kerr.KafkaStorageError, d.path)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("%w: log manager is closed", kerr.KafkaStorageError)
	}
	l := m.logs[tp]
	if l == nil {
		if _, off := m.offline[tp]; off {
			m.mu.Unlock()
			return fmt.Errorf("%w: %s is in an offline log dir", kerr.KafkaStorageError, tp)
		}
		m.preferred[tp] = d.path
		m.mu.Unlock()
		return fmt.Errorf("%w: no replica of %s on this broker", kerr.ReplicaNotAvailable, tp)
	}
	m.mu.Unlock()
	if err := l.Offline(); err != nil {
		return err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.deleted {
		return fmt.Errorf("%w: %s is being deleted", kerr.ReplicaNotAvailable, tp)
	}
	if f := l.future; f != nil {
		if f.parent == d.path {
			return nil
		}
		m.dropFutureLocked(l, "moved elsewhere")
	}
	if filepath.Dir(l.dir) == d.path {
		return nil
	}
	dir := filepath.Join(d.path, tp.String()+"."+randomHex()+FutureDirSuffix)
	fl, err := m.loadFutureLog(l, l.cfg, d, dir, true)
	if err != nil {
		_ = m.fsys.RemoveAll(dir)
		return fmt.Errorf("%w: creating future log %s: %w", kerr.KafkaStorageError, dir, err)
	}
	if err := m.startCopier(l, fl, d); err != nil {
		_ = m.fsys.RemoveAll(dir)
		return err
	}
	m.logger.Info("moving log between log dirs", "partition", tp.String(), "from", filepath.Dir(l.dir), "to", d.path)
	return nil
}

// loadFutureLog opens (isNew: creates) a future log of l's in dir d, with
// l's config cfg.
func (m *Manager) loadFutureLog(l *Log, cfg Config, d *logDir, dir string, isNew bool) (*Log, error) {
	fl, _, err := loadLog(logParams{
		dir: dir, tp: l.tp, cfg: cfg, fsys: m.fsys,
		logger: m.logger, now: m.cfg.Now, bg: &m.bg, scheduleDelete: m.scheduleDelete,
		recoveryPoint: 0, logStartOffset: -1, highWatermark: -1, topicID: l.topicID,
		pidExpirationMs: m.cfg.ProducerIDExpirationMs, isNew: isNew, health: &d.health,
	})
	return fl, err
}

// startCopier makes fl l's future log and starts its copier; l.mu held.
// On failure fl is closed (its dir is the caller's).
func (m *Manager) startCopier(l *Log, fl *Log, d *logDir) error {
	f := &futureLog{log: fl, parent: d.path, stop: make(chan struct{})}
	if !m.bg.Go(func(done <-chan struct{}) { m.copyToFuture(l, f, done) }) {
		fl.Close()
		return fmt.Errorf("%w: log manager is closing", kerr.KafkaStorageError)
	}
	l.future = f
	return nil
}

// dropFutureLocked cancels l's move and removes its future log; l.mu held.
func (m *Manager) dropFutureLocked(l *Log, why string) {
	f := l.future
	if f == nil {
		return
	}
	l.future = nil
	f.cancel()
	f.mu.Lock()
	f.failed = errMoveAborted
	f.mu.Unlock()
	fl := f.log
	fl.mu.Lock()
	old := fl.dir
	fl.deleted = true
	fl.mu.Unlock()
	del := strings.TrimSuffix(old, FutureDirSuffix) + "-delete"
	if err := m.fsys.Rename(old, del); err != nil {
		del = old
	}
	m.logger.Info("cancelled move between log dirs", "partition", l.tp.String(), "to", f.parent, "why", why)
	m.scheduleDelete(0, func() {
		fl.Close()
		if err := m.fsys.RemoveAll(del); err != nil {
			m.logger.Warn("removing future log failed", "dir", del, "err", err)
		}
	})
}

// closeFuture stops l's move and closes its future log, leaving its dir
// for the next start-up to remove and restart (Manager.Close).
func (l *Log) closeFuture() {
	l.mu.Lock()
	f := l.future
	l.future = nil
	l.mu.Unlock()
	if f != nil {
		f.cancel()
		f.log.Close()
	}
}

// copyToFuture is the copier of one move (Kafka's ReplicaAlterLogDirsThread
// for one partition): it reads the current log from the future's end and
// appends what it read, until the future caught up and the swap is done,
// or the move is cancelled or fails.
func (m *Manager) copyToFuture(l *Log, f *futureLog, done <-chan struct{}) {
	var buf []byte
	pause := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-done:
			return false
		case <-f.stop:
			return false
		case <-t.C:
			return true
		}
	}
	fail := func(err error) {
		m.logger.Warn("moving log between log dirs failed", "partition", l.tp.String(), "to", f.parent, "err", err)
		l.mu.Lock()
		if l.future == f {
			m.dropFutureLocked(l, err.Error())
		}
		l.mu.Unlock()
	}
	for {
		select {
		case <-done:
			return
		case <-f.stop:
			return
		default:
		}
		f.mu.Lock()
		gen, ferr := f.gen, f.failed
		f.mu.Unlock()
		if ferr != nil {
			if !errors.Is(ferr, errMoveAborted) {
				fail(ferr)
			}
			return
		}
		if err := l.Offline(); err != nil {
			fail(err)
			return
		}
		pos := f.log.LogEndOffset()
		if start := l.LocalLogStartOffset(); pos < start {
			// A new future log, or retention went past the copy.
			f.mu.Lock()
			var err error
			if f.gen == gen {
				err = f.log.TruncateFullyAndStartAt(start)
			}
			f.mu.Unlock()
			if err != nil {
				fail(err)
				return
			}
			continue
		}
		data, err := l.Read(pos, futureCopyChunk, math.MaxInt64, true)
		if err != nil {
			if errors.Is(err, kerr.OffsetOutOfRange) {
				// Raced with a truncation or retention: look again.
				if !pause(10 * time.Millisecond) {
					return
				}
				continue
			}
			fail(err)
			return
		}
		if data.Records.Size == 0 {
			swapped, err := m.replaceCurrentWithFuture(l, f)
			if err != nil {
				if !errors.Is(err, errMoveAborted) {
					fail(err)
				}
				return
			}
			if swapped {
				return
			}
			if !pause(time.Millisecond) {
				return
			}
			continue
		}
		if buf, err = data.Records.ReadInto(buf[:0]); err != nil {
			fail(fmt.Errorf("%w: reading %s: %w", kerr.KafkaStorageError, l.tp, err))
			return
		}
		f.mu.Lock()
		if f.gen == gen && f.failed == nil {
			// A read never spans segments: the future log rolls where
			// the current one did, so both have the same segments.
			if f.log.activeBaseOffset() < data.FetchOffsetMetadata.SegmentBaseOffset {
				err = f.log.Roll()
			}
			if err == nil {
				_, err = f.log.AppendAsFollower(buf)
			}
		}
		f.mu.Unlock()
		if err != nil {
			fail(err)
			return
		}
		if d := m.moveThrottle(len(buf)); d > 0 && !pause(d) {
			return
		}
	}
}

// moveThrottle is how long to wait after copying n bytes, for
// ManagerConfig.AlterLogDirsBytesPerSecond.
func (m *Manager) moveThrottle(n int) time.Duration {
	if m.cfg.AlterLogDirsBytesPerSecond == nil {
		return 0
	}
	rate := m.cfg.AlterLogDirsBytesPerSecond()
	if rate <= 0 || rate == math.MaxInt64 {
		return 0
	}
	return time.Duration(float64(n) / float64(rate) * float64(time.Second))
}

// replaceCurrentWithFuture swaps l's current log for its future log if the
// future has caught up (Kafka's replaceCurrentWithFutureLog). It reports
// whether it swapped; false with a nil error: the current log grew, copy
// on.
func (m *Manager) replaceCurrentWithFuture(l *Log, f *futureLog) (bool, error) {
	fl := f.log
	// Most of the data is fsynced before any lock is taken.
	if err := fl.Flush(); err != nil {
		return false, err
	}
	// No compaction may swap segments of the log being swapped.
	m.AbortAndPauseCleaning(l.tp)
	defer func() { _ = m.ResumeCleaning(l.tp) }()

	l.replaceMu.Lock()
	l.mu.Lock()
	if l.future != f || l.closed || l.deleted {
		l.mu.Unlock()
		l.replaceMu.Unlock()
		return false, errMoveAborted
	}
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		l.replaceMu.Unlock()
		return false, err
	}
	f.mu.Lock()
	if f.failed != nil || fl.LogEndOffset() != l.LogEndOffset() {
		err := f.failed
		f.mu.Unlock()
		l.mu.Unlock()
		l.replaceMu.Unlock()
		return false, err
	}
	// The tail, appended since the flush above, while nothing can be
	// appended to either log.
	err := fl.Flush()
	if err == nil {
		fl.epochs.entries = slices.Clone(l.epochs.entries)
		err = fl.epochs.write()
	}
	var oldSegs []*Segment
	var delDir string
	if err == nil {
		oldSegs, delDir, err = m.swapDirs(l, f)
	}
	f.mu.Unlock()
	l.mu.Unlock()
	l.replaceMu.Unlock()
	if err != nil {
		return false, err
	}
	oldParent := filepath.Dir(strings.TrimSuffix(delDir, "/"))
	m.mu.Lock()
	m.perDir[oldParent]--
	m.perDir[f.parent]++
	m.mu.Unlock()
	if m.cleaner != nil {
		m.cleaner.mgr.removeCheckpoint(oldParent, l.tp)
	}
	for _, d := range []*logDir{m.logDirFor(oldParent), m.logDirFor(f.parent)} {
		if d != nil && d.failed() == nil {
			if err := m.checkpointDir(d, RecoveryPointCheckpointFile, ReplicationCheckpointFile, LogStartOffsetCheckpointFile); err != nil {
				m.logger.Warn("writing checkpoints failed", "dir", d.path, "err", err)
			}
		}
	}
	delay := time.Duration(l.Config().FileDeleteDelayMs) * time.Millisecond
	m.scheduleDelete(delay, func() {
		for _, s := range oldSegs {
			s.closeFiles()
		}
		if err := m.fsys.RemoveAll(delDir); err != nil {
			m.logger.Warn("removing moved log failed", "dir", delDir, "err", err)
		}
	})
	m.logger.Info("moved log between log dirs", "partition", l.tp.String(), "from", oldParent, "to", f.parent, "log_end_offset", l.LogEndOffset())
	if fn := m.onLogMoved.Load(); fn != nil {
		(*fn)(l.tp)
	}
	return true, nil
}

// swapDirs renames the current dir for deletion and the future dir to the
// partition's name, and makes l serve the future's segments. It returns the
// old segments and the dir they are in now. l.replaceMu, l.mu and f.mu
// held; both logs have the same end offset.
func (m *Manager) swapDirs(l *Log, f *futureLog) ([]*Segment, string, error) {
	fl := f.log
	oldDir := l.dir
	delDir := oldDir + "." + randomHex() + "-delete"
	final := filepath.Join(f.parent, l.tp.String())
	if err := m.fsys.Rename(oldDir, delDir); err != nil {
		return nil, "", fmt.Errorf("%w: renaming %s for deletion: %w", kerr.KafkaStorageError, oldDir, err)
	}
	// Durable before the future takes the name: a crash in between
	// finds only the future, complete, and promotes it.
	if err := m.fsys.SyncDir(filepath.Dir(oldDir)); err != nil {
		_ = m.fsys.Rename(delDir, oldDir)
		return nil, "", fmt.Errorf("%w: syncing %s: %w", kerr.KafkaStorageError, filepath.Dir(oldDir), err)
	}
	fl.replaceMu.Lock()
	defer fl.replaceMu.Unlock()
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if err := m.fsys.Rename(fl.dir, final); err != nil {
		_ = m.fsys.Rename(delDir, oldDir)
		return nil, "", fmt.Errorf("%w: renaming %s to %s: %w", kerr.KafkaStorageError, fl.dir, final, err)
	}
	if err := m.fsys.SyncDir(f.parent); err != nil {
		m.logger.Warn("syncing log dir after a move failed", "dir", f.parent, "err", err)
	}
	fl.segMu.Lock()
	segs := fl.segs
	fl.segs = nil
	fl.closed, fl.deleted = true, true
	size := fl.size
	fl.segMu.Unlock()
	fl.pathMu.Lock()
	for _, s := range segs {
		s.setDir(final)
	}
	fl.pathMu.Unlock()
	fl.epochs.path = filepath.Join(final, LeaderEpochCheckpointFile)

	l.segMu.Lock()
	old := l.segs
	l.segs = segs
	l.size = size
	l.dir = final
	l.hwMeta.Store(nil)
	l.lsoMeta.Store(nil)
	l.segMu.Unlock()
	l.pathMu.Lock()
	for _, s := range old {
		s.setDir(delDir)
	}
	l.pathMu.Unlock()
	l.epochs = fl.epochs
	// The producer state in memory stays (it may know producers whose
	// batches retention removed); the future's snapshot files are the
	// log's now, and one of the kept state is written at the end.
	l.snapshots, l.lastSnap = fl.snapshots, fl.lastSnap
	l.recoveryPoint = fl.recoveryPoint
	l.health.Store(fl.health.Load())
	l.future = nil
	if _, err := l.takeSnapshotAt(l.LogEndOffset(), true); err != nil {
		m.logger.Warn("writing producer snapshot after a move failed", "partition", l.tp.String(), "err", err)
	}
	return old, delDir, nil
}

// interruptedMove is a move between log dirs that a shutdown or crash
// interrupted: the future log's dir and the log dir it is in.
type interruptedMove struct {
	parent, dir string
}

// settleFutureDirs handles the "-future" dirs found at start-up, before any
// log is loaded: one whose current log exists is noted for Start to resume
// (a second one for the same partition is removed); one without is
// promoted to the partition's log. If some dir cannot be listed, the
// current log may be there: futures are then left alone (and not loaded).
func (m *Manager) settleFutureDirs() {
	type future struct {
		tp           TopicPartition
		parent, full string
	}
	current := map[TopicPartition]bool{}
	var futures []future
	for _, d := range m.dirs {
		entries, err := m.fsys.ReadDir(d.path)
		if err != nil {
			return
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if tp, ok := parseFutureDir(e.Name()); ok {
				futures = append(futures, future{tp, d.path, filepath.Join(d.path, e.Name())})
			} else if tp, ok := parseTopicPartitionDir(e.Name()); ok {
				current[tp] = true
			}
		}
	}
	for _, f := range futures {
		if current[f.tp] {
			if _, dup := m.resume[f.tp]; !dup {
				m.resume[f.tp] = interruptedMove{parent: f.parent, dir: f.full}
				continue
			}
			m.logger.Info("removing a second future log of one partition", "dir", f.full)
			if err := m.fsys.RemoveAll(f.full); err != nil {
				m.logger.Warn("removing future log failed", "dir", f.full, "err", err)
			}
			continue
		}
		final := filepath.Join(f.parent, f.tp.String())
		m.logger.Info("promoting the future log of a move interrupted while swapping", "dir", f.full, "to", final)
		if err := m.fsys.Rename(f.full, final); err != nil {
			m.logger.Warn("promoting future log failed", "dir", f.full, "err", err)
			continue
		}
		if err := m.fsys.SyncDir(f.parent); err != nil {
			m.logger.Warn("syncing log dir failed", "dir", f.parent, "err", err)
		}
		current[f.tp] = true
	}
}

// resumeMoves resumes the moves that a shutdown or crash interrupted
// (Manager.Start), each from its future log, or from scratch if that
// cannot be loaded.
func (m *Manager) resumeMoves() {
	m.mu.Lock()
	resume := m.resume
	m.resume = map[TopicPartition]interruptedMove{}
	m.mu.Unlock()
	for tp, r := range resume {
		err := m.resumeMove(tp, r)
		if err == nil {
			continue
		}
		m.logger.Warn("resuming a move between log dirs failed: it starts over", "partition", tp.String(), "dir", r.dir, "err", err)
		if err := m.fsys.RemoveAll(r.dir); err != nil {
			m.logger.Warn("removing future log failed", "dir", r.dir, "err", err)
			continue
		}
		if err := m.AlterLogDir(tp, r.parent); err != nil {
			m.logger.Warn("restarting move between log dirs failed", "partition", tp.String(), "to", r.parent, "err", err)
		}
	}
}

// resumeMove loads an interrupted move's future log, cuts it back to where
// it agrees with the current log, and resumes the copy from there.
func (m *Manager) resumeMove(tp TopicPartition, r interruptedMove) error {
	d := m.logDirFor(r.parent)
	if d == nil {
		return fmt.Errorf("%w: log dir %s is not in log.dirs", kerr.LogDirNotFound, r.parent)
	}
	if err := d.failed(); err != nil {
		return fmt.Errorf("%w: log dir %s is offline", kerr.KafkaStorageError, d.path)
	}
	m.mu.Lock()
	l := m.logs[tp]
	m.mu.Unlock()
	if l == nil {
		return fmt.Errorf("%w: no current log of %s", kerr.ReplicaNotAvailable, tp)
	}
	if err := l.Offline(); err != nil {
		return err
	}
	fl, err := m.loadFutureLog(l, l.Config(), d, r.dir, false)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed || l.deleted:
		err = fmt.Errorf("%w: %s is being deleted", kerr.ReplicaNotAvailable, tp)
	case l.future != nil:
		err = errors.New("another move of the partition started")
	case filepath.Dir(l.dir) == d.path:
		err = errors.New("the log is in that dir already")
	}
	var from int64
	if err == nil {
		from, err = alignFuture(l, fl)
	}
	if err == nil {
		err = m.startCopier(l, fl, d)
	} else {
		fl.Close()
	}
	if err != nil {
		return err
	}
	m.logger.Info("resuming a move between log dirs", "partition", tp.String(), "from", filepath.Dir(l.dir), "to", d.path, "future_log_end_offset", from)
	return nil
}

// alignFuture cuts the future log fl back to the longest prefix that the
// current log l has too, judged by their leader epochs (as Kafka truncates
// a future replica with OffsetForLeaderEpoch against the current one):
// for each epoch of the future, the current log must have that epoch from
// the same offset, and as far. It returns the future's end offset after
// it. l.mu held; fl is not shared yet.
func alignFuture(l, fl *Log) (int64, error) {
	fleo := fl.LogEndOffset()
	fl.mu.Lock()
	fes := slices.Clone(fl.epochs.entries)
	fl.mu.Unlock()
	target := fleo
	if fleo > fl.LogStartOffset() && (len(fes) == 0 || fes[0].StartOffset > fl.LogStartOffset()) {
		target = -1 // batches of no known epoch: nothing can be vouched for
	}
	ces := l.epochs.entries
	for i, e := range fes {
		if target < 0 {
			break
		}
		end := fleo
		if i+1 < len(fes) {
			end = fes[i+1].StartOffset
		}
		j := slices.IndexFunc(ces, func(c EpochEntry) bool { return c.Epoch == e.Epoch })
		if j < 0 || (i > 0 && ces[j].StartOffset != e.StartOffset) || ces[j].StartOffset > e.StartOffset {
			target = e.StartOffset
			break
		}
		cend := l.LogEndOffset()
		if j+1 < len(ces) {
			cend = ces[j+1].StartOffset
		}
		if cend < end {
			target = cend
			break
		}
	}
	target = min(target, l.LogEndOffset())
	if target >= fleo {
		return fleo, nil
	}
	if target <= fl.LogStartOffset() {
		start := l.LocalLogStartOffset()
		return start, fl.TruncateFullyAndStartAt(start)
	}
	_, err := fl.TruncateTo(target)
	return target, err
}
