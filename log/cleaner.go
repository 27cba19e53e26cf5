package log

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moldau/moldau/broker/routine"
)

// CleanerConfig configures the log cleaner (Kafka's CleanerConfig), from
// the broker's log.cleaner.* properties. The zero value is a disabled
// cleaner; DefaultCleanerConfig has Kafka's defaults.
type CleanerConfig struct {
	Enable  bool // log.cleaner.enable
	Threads int  // log.cleaner.threads, default 1; 0 starts no cleaner thread
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size (128 MiB): the
	// memory of the offset maps of all threads together.
	DedupeBufferSize int64
	// DedupeBufferLoadFactor is log.cleaner.io.buffer.load.factor (0.9):
	// how full an offset map may get.
	DedupeBufferLoadFactor float64
	// IOBufferSize is log.cleaner.io.buffer.size (512 KiB): the read and
	// write buffers of all threads together.
	IOBufferSize int
	// MaxMessageSize is message.max.bytes (1048588): the I/O buffers
	// grow up to it (and to a larger batch if one is found).
	MaxMessageSize int
	// MaxIOBytesPerSecond is log.cleaner.io.max.bytes.per.second
	// (unlimited): reads and writes of all threads together.
	MaxIOBytesPerSecond float64
	// Backoff is log.cleaner.backoff.ms (15 s): the sleep when no log
	// needs cleaning.
	Backoff time.Duration
}

// DefaultCleanerConfig returns Kafka's defaults (cleaner enabled).
func DefaultCleanerConfig() CleanerConfig {
	return CleanerConfig{
		Enable: true, Threads: 1, DedupeBufferSize: 128 << 20, DedupeBufferLoadFactor: 0.9,
		IOBufferSize: 512 << 10, MaxMessageSize: 1048588, MaxIOBytesPerSecond: math.MaxFloat64,
		Backoff: 15 * time.Second,
	}
}

func (c CleanerConfig) withDefaults() CleanerConfig {
	d := DefaultCleanerConfig()
	if c.Threads < 0 {
		c.Threads = d.Threads
	}
	if c.DedupeBufferSize <= 0 {
		c.DedupeBufferSize = d.DedupeBufferSize
	}
	if c.DedupeBufferLoadFactor <= 0 {
		c.DedupeBufferLoadFactor = d.DedupeBufferLoadFactor
	}
	// Above 1 the map would fill before the cleaner stops adding to it.
	c.DedupeBufferLoadFactor = min(c.DedupeBufferLoadFactor, 1)
	if c.IOBufferSize <= 0 {
		c.IOBufferSize = d.IOBufferSize
	}
	if c.MaxMessageSize <= 0 {
		c.MaxMessageSize = d.MaxMessageSize
	}
	if c.MaxIOBytesPerSecond <= 0 {
		c.MaxIOBytesPerSecond = d.MaxIOBytesPerSecond
	}
	if c.Backoff <= 0 {
		c.Backoff = d.Backoff
	}
	return c
}

// LogCleaner compacts the logs whose cleanup.policy has compact (Kafka's
// LogCleaner): log.cleaner.threads goroutines each repeatedly pick the
// dirtiest log, clean it and swap the cleaned segments in, or sleep
// log.cleaner.backoff.ms when none needs cleaning. See doc.go.
type LogCleaner struct {
	cfg       CleanerConfig
	mgr       *cleanerManager
	throttler *throttler
	logger    *slog.Logger
	now       func() time.Time
	group     routine.Group
	threads   []*cleanerThread
	// abortedTxns is where cleaners read aborted transactions (a test
	// replaces it; see cleaner_txn.go).
	abortedTxns abortedTxnsFunc

	startOnce sync.Once
	cleanings atomic.Int64 // completed cleanings, for tests
}

// cleanerThread is one cleaner goroutine and the statistics of its last
// cleaning (Kafka's CleanerThread).
type cleanerThread struct {
	lc      *LogCleaner
	id      int
	cleaner *cleaner

	mu        sync.Mutex
	lastStats cleanerStats
	lastPre   preCleanStats
}

func newLogCleaner(cfg CleanerConfig, dirs []string, fsys FS, logger *slog.Logger, now func() time.Time, logs func() []*Log) (*LogCleaner, error) {
	cfg = cfg.withDefaults()
	lc := &LogCleaner{
		cfg: cfg, logger: logger, now: now,
		mgr:         newCleanerManager(dirs, fsys, logger, now, logs),
		throttler:   newThrottler(cfg.MaxIOBytesPerSecond, nil),
		abortedTxns: (*Log).AbortedTransactions,
	}
	if cfg.Threads == 0 {
		return lc, nil
	}
	perThread := min(cfg.DedupeBufferSize/int64(cfg.Threads), math.MaxInt32)
	if float64(perThread/offsetMapEntrySize)*cfg.DedupeBufferLoadFactor <= 1 {
		return nil, fmt.Errorf("log cleaner: the offset map is too small to hold even one key, so log cleaning would never make progress: increase log.cleaner.dedupe.buffer.size (%d) or decrease log.cleaner.threads (%d)", cfg.DedupeBufferSize, cfg.Threads)
	}
	ioBuf := max(cfg.IOBufferSize/cfg.Threads/2, BatchHeaderSize)
	done := lc.group.Stopping()
	for i := 0; i < cfg.Threads; i++ {
		t := &cleanerThread{lc: lc, id: i}
		c := newCleaner(i, perThread, ioBuf, cfg.MaxMessageSize, cfg.DedupeBufferLoadFactor, lc.throttler, now, logger)
		c.done = done
		c.abortedTxns = func(l *Log, from, upper int64) ([]AbortedTxn, error) { return lc.abortedTxns(l, from, upper) }
		c.checkDone = func(l *Log) error {
			select {
			case <-done:
				return errCleaningAborted
			default:
			}
			if lc.mgr.isAborted(l.tp) {
				return errCleaningAborted
			}
			return nil
		}
		t.cleaner = c
		lc.threads = append(lc.threads, t)
	}
	return lc, nil
}

// startup starts the cleaner threads. Idempotent.
func (lc *LogCleaner) startup() {
	lc.startOnce.Do(func() {
		lc.logger.Info("starting the log cleaner", "threads", len(lc.threads))
		for _, t := range lc.threads {
			lc.group.Go(t.run)
		}
	})
}

// shutdown stops the cleaner threads and waits for them: a cleaning in
// progress stops at its next read (its cleaned segment is deleted) or
// after its swap. Idempotent.
func (lc *LogCleaner) shutdown() {
	lc.group.StopAndWait()
}

// cleanerNice is the nice value of the cleaner threads' OS threads.
const cleanerNice = 19

func (t *cleanerThread) run(done <-chan struct{}) {
	// The cleaner takes the CPU the request path leaves instead of
	// half of it.
	if err := routine.LowerThreadPriority(cleanerNice); err != nil {
		t.lc.logger.Warn("could not lower the log cleaner thread's CPU priority", "err", err)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return
		default:
		}
		if !t.tryCleanFilthiestLog() {
			timer.Reset(t.lc.cfg.Backoff)
			select {
			case <-done:
				return
			case <-timer.C:
			}
		}
		t.lc.mgr.maintainUncleanablePartitions()
	}
}

// tryCleanFilthiestLog cleans the dirtiest log, if one needs it, and
// reports whether it did. A cleaning that fails for another reason than
// an abort marks the partition uncleanable until it is deleted or the
// broker restarts (Kafka's LogCleaningException).
func (t *cleanerThread) tryCleanFilthiestLog() bool {
	var pre preCleanStats
	ltc := t.lc.mgr.grabFilthiestCompactedLog(&pre)
	if ltc == nil {
		return false
	}
	t.mu.Lock()
	t.lastPre = pre
	t.mu.Unlock()
	if err := t.cleanLog(ltc); err != nil {
		t.lc.logger.Warn("log cleaning failed; the partition is marked uncleanable", "cleaner", t.id, "partition", ltc.log.tp.String(), "err", err)
		t.lc.mgr.markPartitionUncleanable(logDirOf(ltc.log), ltc.log.tp)
		return false
	}
	return true
}

// cleanLog cleans one log and records where cleaning got.
func (t *cleanerThread) cleanLog(ltc *logToClean) (err error) {
	l := ltc.log
	end, cleaned := ltc.firstDirtyOffset, false
	defer func() {
		if r := recover(); r != nil {
			// A bug must not take the broker down with it.
			t.lc.logger.Error("log cleaner panic", "partition", l.tp.String(), "panic", r, "stack", string(debug.Stack()))
			err, cleaned = fmt.Errorf("log cleaner panic: %v", r), false
		}
		t.lc.mgr.doneCleaning(l.tp, logDirOf(l), end, cleaned)
	}()
	next, stats, err := t.cleaner.clean(ltc)
	switch {
	case err == nil:
		end, cleaned = next, true
		t.lc.cleanings.Add(1)
		t.recordStats(l, ltc.firstDirtyOffset, next, stats)
		return nil
	case errors.Is(err, errCleaningAborted), errors.Is(err, errLogChanged):
		t.lc.logger.Info("log cleaning stopped", "cleaner", t.id, "partition", l.tp.String(), "reason", err)
		return nil
	}
	return err
}

func (t *cleanerThread) recordStats(l *Log, from, to int64, s cleanerStats) {
	t.mu.Lock()
	t.lastStats = s
	t.mu.Unlock()
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	secs := s.elapsed().Seconds()
	t.lc.logger.Info("cleaned log", "cleaner", t.id, "partition", l.tp.String(),
		"dirty_from", from, "dirty_to", to,
		"read_mb", fmt.Sprintf("%.1f", mb(s.bytesRead)), "seconds", fmt.Sprintf("%.2f", secs),
		"indexed_mb", fmt.Sprintf("%.1f", mb(s.mapBytesRead)), "index_seconds", fmt.Sprintf("%.2f", s.mapDone.Sub(s.start).Seconds()),
		"buffer_utilization_percent", fmt.Sprintf("%.1f", 100*s.bufferUtilization),
		"start_messages", s.messagesRead, "end_messages", s.messagesWritten,
		"written_mb", fmt.Sprintf("%.1f", mb(s.bytesWritten)),
		"size_reduction_percent", fmt.Sprintf("%.1f", 100*(1-float64(s.bytesWritten)/math.Max(float64(s.bytesRead), 1))))
	if s.invalidMessagesRead > 0 {
		t.lc.logger.Warn("found records without a key while cleaning", "partition", l.tp.String(), "records", s.invalidMessagesRead)
	}
}

func (t *cleanerThread) stats() (cleanerStats, preCleanStats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastStats, t.lastPre
}

// newCleanerFor creates the Manager's cleaner if log.cleaner.enable is set
// and registers its metrics.
func (m *Manager) newCleanerFor(cfg ManagerConfig) error {
	if !cfg.Cleaner.Enable {
		return nil
	}
	var dirs []string
	for _, d := range m.dirs {
		if d.failed() == nil {
			dirs = append(dirs, d.path)
		}
	}
	lc, err := newLogCleaner(cfg.Cleaner, dirs, m.fsys, m.logger, cfg.Now, m.Logs)
	if err != nil {
		return err
	}
	m.cleaner = lc
	if cfg.Registerer != nil {
		m.cleanerMetrics = newCleanerCollector(lc)
		if err := cfg.Registerer.Register(m.cleanerMetrics); err != nil {
			return fmt.Errorf("log: registering cleaner metrics: %w", err)
		}
	}
	return nil
}

// forgetCleaning stops cleaning a log about to be deleted and drops its
// cleaner checkpoint (Kafka's LogManager.asyncDelete does both).
func (m *Manager) forgetCleaning(l *Log) {
	if m.cleaner == nil {
		return
	}
	m.cleaner.mgr.abortCleaning(l.tp)
	m.cleaner.mgr.removeCheckpoint(logDirOf(l), l.tp)
}

// AbortAndPauseCleaning stops the cleaning of tp if one runs, waits for it
// to stop, and keeps tp from being cleaned until ResumeCleaning. Kafka's
// LogManager.truncateTo does this around a truncation; pauses nest.
func (m *Manager) AbortAndPauseCleaning(tp TopicPartition) {
	if m.cleaner != nil {
		m.cleaner.mgr.abortAndPauseCleaning(tp)
	}
}

// ResumeCleaning undoes one AbortAndPauseCleaning.
func (m *Manager) ResumeCleaning(tp TopicPartition) error {
	if m.cleaner == nil {
		return nil
	}
	return m.cleaner.mgr.resumeCleaning(tp)
}

// MaybeTruncateCleanerCheckpoint lowers tp's cleaner checkpoint to offset
// if it is above: the log was truncated there (Kafka's
// LogCleaner.maybeTruncateCheckpoint, called by LogManager.truncateTo).
func (m *Manager) MaybeTruncateCleanerCheckpoint(tp TopicPartition, offset int64) {
	if l := m.GetLog(tp); l != nil && m.cleaner != nil {
		m.cleaner.mgr.maybeTruncateCheckpoint(logDirOf(l), tp, offset)
	}
}

// CleanerCheckpoint returns tp's first dirty offset as checkpointed by
// the cleaner, if it was ever cleaned.
func (m *Manager) CleanerCheckpoint(tp TopicPartition) (int64, bool) {
	if m.cleaner == nil {
		return 0, false
	}
	off, ok := m.cleaner.mgr.allCleanerCheckpoints()[tp]
	return off, ok
}
