package log

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"
)

// CleanerOffsetCheckpointFile is, in each log dir, where the cleaner got
// in each compacted log: the first dirty offset (Kafka's
// cleaner-offset-checkpoint, in the format of the other offset
// checkpoints).
const CleanerOffsetCheckpointFile = "cleaner-offset-checkpoint"

// cleaningState is where a partition is in the cleaner (Kafka's
// LogCleaningState): absent (may be cleaned), in progress, aborted (the
// cleaning must stop, then it is paused), or paused n times.
type cleaningState int

const (
	cleaningInProgress cleaningState = iota + 1
	cleaningAborted
	cleaningPaused
)

type partitionCleaning struct {
	state  cleaningState
	paused int // pause count when paused
}

// preCleanStats are gathered while choosing a log (Kafka's PreCleanStats).
type preCleanStats struct {
	maxCompactionDelayMs int64
	delayedPartitions    int
	cleanablePartitions  int
}

func (p *preCleanStats) updateMaxCompactionDelay(delayMs int64) {
	p.maxCompactionDelayMs = max(p.maxCompactionDelayMs, delayMs)
	if delayMs > 0 {
		p.delayedPartitions++
	}
}

// cleanerManager tracks which partitions are being cleaned, paused or
// uncleanable, keeps the cleaner offset checkpoints, and chooses the next
// log to clean (Kafka's LogCleanerManager). Its mutex is taken before any
// log's locks and before Manager.mu (see doc.go); checkpoint files are
// written under it, as Kafka does.
type cleanerManager struct {
	fsys   FS
	logger *slog.Logger
	now    func() time.Time
	logs   func() []*Log

	mu          sync.Mutex
	cond        *sync.Cond // signalled when a partition becomes paused
	inProgress  map[TopicPartition]*partitionCleaning
	uncleanable map[string]map[TopicPartition]bool // log dir → partitions that failed
	checkpoints map[string]map[TopicPartition]int64
	// dirtiestRatio is the cleanable ratio of the dirtiest log at the
	// last choice; timeOfLastRun when that was.
	dirtiestRatio float64
	timeOfLastRun time.Time
}

func newCleanerManager(dirs []string, fsys FS, logger *slog.Logger, now func() time.Time, logs func() []*Log) *cleanerManager {
	cm := &cleanerManager{
		fsys: fsys, logger: logger, now: now, logs: logs,
		inProgress:    make(map[TopicPartition]*partitionCleaning),
		uncleanable:   make(map[string]map[TopicPartition]bool),
		checkpoints:   make(map[string]map[TopicPartition]int64),
		timeOfLastRun: now(),
	}
	cm.cond = sync.NewCond(&cm.mu)
	for _, d := range dirs {
		c, err := ReadOffsetCheckpoint(fsys, filepath.Join(d, CleanerOffsetCheckpointFile))
		if err != nil {
			logger.Warn("ignoring malformed cleaner offset checkpoint: logs are cleaned from their start", "dir", d, "err", err)
			c = map[TopicPartition]int64{}
		}
		cm.checkpoints[d] = c
	}
	return cm
}

func logDirOf(l *Log) string { return filepath.Dir(l.Dir()) }

// allCleanerCheckpoints returns every checkpointed first dirty offset.
func (cm *cleanerManager) allCleanerCheckpoints() map[TopicPartition]int64 {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	out := make(map[TopicPartition]int64)
	for _, c := range cm.checkpoints {
		for tp, off := range c {
			out[tp] = off
		}
	}
	return out
}

// grabFilthiestCompactedLog chooses the compacted log with the highest
// cleanable ratio among those over min.cleanable.dirty.ratio or overdue by
// max.compaction.lag.ms, and marks it in progress (Kafka's
// grabFilthiestCompactedLog). Nil if there is none.
func (cm *cleanerManager) grabFilthiestCompactedLog(pre *preCleanStats) *logToClean {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	now := cm.now()
	cm.timeOfLastRun = now
	var best *logToClean
	dirtiest, cleanable := 0.0, 0
	for _, l := range cm.logs() {
		if !l.Config().Compact() || cm.inProgress[l.tp] != nil || cm.uncleanable[logDirOf(l)][l.tp] {
			continue
		}
		v := l.cleanerView()
		ltc, delay := cm.logToClean(l, &v, now.UnixMilli())
		pre.updateMaxCompactionDelay(delay)
		if ltc.totalBytes() == 0 {
			continue
		}
		ratio := ltc.cleanableRatio()
		dirtiest = max(dirtiest, ratio)
		if (ltc.needCompactionNow && ltc.cleanableBytes > 0) || ratio > v.cfg.MinCleanableDirtyRatio {
			cleanable++
			if best == nil || ratio > best.cleanableRatio() {
				best = ltc
			}
		}
	}
	cm.dirtiestRatio = dirtiest
	if best == nil {
		return nil
	}
	pre.cleanablePartitions = cleanable
	cm.inProgress[best.log.tp] = &partitionCleaning{state: cleaningInProgress}
	return best
}

// logToClean computes what cleaning l would do; cm.mu held.
func (cm *cleanerManager) logToClean(l *Log, v *logView, now int64) (*logToClean, int64) {
	dir := filepath.Dir(v.dir)
	lastClean, has := cm.checkpoints[dir][l.tp]
	if off, ok := l.takeTruncation(); ok && has && lastClean > off {
		// Data past off was truncated (and may have been written again):
		// it is dirty (Kafka's maybeTruncateCheckpoint).
		lastClean = off
		cm.updateCheckpointsLocked(dir, &checkpointEntry{l.tp, off}, nil)
	}
	firstDirty, uncleanable, force := cm.cleanableOffsets(l, v, lastClean, has, now)
	if force {
		cm.updateCheckpointsLocked(dir, &checkpointEntry{l.tp, firstDirty}, nil)
	}
	delay := maxCompactionDelay(v, firstDirty, now)
	ltc := &logToClean{log: l, firstDirtyOffset: firstDirty, needCompactionNow: delay > 0}
	ltc.firstUncleanableOffset, ltc.cleanableBytes = calculateCleanableBytes(v, firstDirty, uncleanable)
	for _, s := range v.segs {
		if s.base >= firstDirty {
			break
		}
		ltc.cleanBytes += s.size
	}
	return ltc, delay
}

// cleanableOffsets returns the range of dirty offsets that may be cleaned
// and whether the checkpoint must be reset (Kafka's cleanableOffsets). The
// cleaner never passes the last stable offset (so never the high
// watermark), the active segment, or a segment whose largest timestamp is
// within min.compaction.lag.ms of now.
func (cm *cleanerManager) cleanableOffsets(l *Log, v *logView, lastClean int64, has bool, now int64) (firstDirty, firstUncleanable int64, force bool) {
	firstDirty = v.logStart
	if has {
		firstDirty = lastClean
	}
	switch {
	case firstDirty < v.logStart:
		if !v.cfg.Delete() {
			cm.logger.Warn("resetting the first dirty offset to the log start offset: the checkpointed offset is below it", "partition", l.tp.String(), "checkpoint", firstDirty, "log_start_offset", v.logStart)
		}
		firstDirty, force = v.logStart, true
	case firstDirty > v.leo:
		cm.logger.Warn("resetting the first dirty offset to the log start offset: the checkpointed offset is past the log end", "partition", l.tp.String(), "checkpoint", firstDirty, "log_end_offset", v.leo)
		firstDirty, force = v.logStart, true
	}
	firstUncleanable = min(v.lso, v.activeBase())
	if lag := max(v.cfg.MinCompactionLagMs, 0); lag > 0 {
		for _, s := range v.nonActiveFrom(firstDirty) {
			ts := s.maxTs
			if ts < 0 {
				ts = s.seg.largestTimestamp()
			}
			if ts > now-lag {
				firstUncleanable = min(firstUncleanable, s.base)
				break
			}
		}
	}
	return firstDirty, max(firstDirty, firstUncleanable), force
}

// maxCompactionDelay is how long past max.compaction.lag.ms the oldest
// dirty segment is (by its first batch's timestamp), 0 if not overdue
// (Kafka's maxCompactionDelay).
func maxCompactionDelay(v *logView, firstDirty, now int64) int64 {
	earliest := int64(1<<63 - 1)
	buf := make([]byte, BatchHeaderSize)
	for _, s := range v.nonActiveFrom(firstDirty) {
		ts := s.firstBatchTs
		if ts < 0 && s.size > 0 {
			if h, err := s.seg.readHeader(0, buf); err == nil {
				ts = h.MaxTimestamp
			}
		}
		if ts > 0 {
			earliest = min(earliest, ts)
		}
	}
	cleanUntil := now - max(v.cfg.MaxCompactionLagMs, 0)
	if earliest < cleanUntil {
		return cleanUntil - earliest
	}
	return 0
}

// calculateCleanableBytes rounds the uncleanable offset down to a segment
// base and returns it with the bytes of the segments from the first dirty
// one up to it (Kafka's calculateCleanableBytes).
func calculateCleanableBytes(v *logView, firstDirty, uncleanable int64) (int64, int64) {
	firstUncleanable := v.activeBase()
	if segs := v.nonActiveFrom(uncleanable); len(segs) > 0 {
		firstUncleanable = segs[0].base
	}
	var n int64
	for _, s := range v.overlapping(min(firstDirty, firstUncleanable), firstUncleanable) {
		n += s.size
	}
	return firstUncleanable, n
}

type checkpointEntry struct {
	tp     TopicPartition
	offset int64
}

// updateCheckpointsLocked updates the cleaner checkpoint of dir: drops
// partitions whose log is gone (or remove), sets update, and writes the
// file; cm.mu held (Kafka's updateCheckpoints).
func (cm *cleanerManager) updateCheckpointsLocked(dir string, update *checkpointEntry, remove *TopicPartition) {
	c, ok := cm.checkpoints[dir]
	if !ok {
		return // offline dir
	}
	live := make(map[TopicPartition]bool)
	for _, l := range cm.logs() {
		live[l.tp] = true
	}
	next := make(map[TopicPartition]int64, len(c)+1)
	for tp, off := range c {
		if live[tp] && (remove == nil || tp != *remove) {
			next[tp] = off
		}
	}
	if update != nil {
		next[update.tp] = update.offset
	}
	cm.checkpoints[dir] = next
	if err := WriteOffsetCheckpoint(cm.fsys, filepath.Join(dir, CleanerOffsetCheckpointFile), next); err != nil {
		cm.logger.Error("writing the cleaner offset checkpoint failed", "dir", dir, "err", err)
	}
}

// doneCleaning records how far cleaning tp got and frees it, or, if its
// cleaning was aborted, pauses it (Kafka's doneCleaning).
func (cm *cleanerManager) doneCleaning(tp TopicPartition, dir string, endOffset int64, cleaned bool) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	st := cm.inProgress[tp]
	switch {
	case st == nil:
	case st.state == cleaningAborted:
		st.state, st.paused = cleaningPaused, st.paused+1
		cm.cond.Broadcast()
	default:
		if cleaned {
			cm.updateCheckpointsLocked(dir, &checkpointEntry{tp, endOffset}, nil)
		}
		delete(cm.inProgress, tp)
	}
}

// abortAndPauseCleaning stops the cleaning of tp if it is running, waits
// until it stopped, and keeps tp from being cleaned until
// resumeCleaning (Kafka's abortAndPauseCleaning). Pauses nest.
func (cm *cleanerManager) abortAndPauseCleaning(tp TopicPartition) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	switch st := cm.inProgress[tp]; {
	case st == nil:
		cm.inProgress[tp] = &partitionCleaning{state: cleaningPaused, paused: 1}
	case st.state == cleaningInProgress:
		st.state = cleaningAborted
	default: // paused, or aborted by another caller: one more pause
		st.paused++
	}
	for st := cm.inProgress[tp]; st != nil && st.state != cleaningPaused; st = cm.inProgress[tp] {
		cm.cond.Wait()
	}
}

// resumeCleaning undoes one pause of tp (Kafka's resumeCleaning).
func (cm *cleanerManager) resumeCleaning(tp TopicPartition) error {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	st := cm.inProgress[tp]
	if st == nil || st.state != cleaningPaused {
		return fmt.Errorf("log cleaner: compaction of %s cannot be resumed: it is not paused", tp)
	}
	if st.paused--; st.paused == 0 {
		delete(cm.inProgress, tp)
	}
	return nil
}

// abortCleaning stops a running cleaning of tp and waits for it (Kafka's
// abortCleaning).
func (cm *cleanerManager) abortCleaning(tp TopicPartition) {
	cm.abortAndPauseCleaning(tp)
	if err := cm.resumeCleaning(tp); err != nil {
		cm.logger.Warn("resuming cleaning after an abort", "partition", tp.String(), "err", err)
	}
}

// isAborted reports whether tp's cleaning was asked to stop.
func (cm *cleanerManager) isAborted(tp TopicPartition) bool {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	st := cm.inProgress[tp]
	return st != nil && st.state == cleaningAborted
}

// maybeTruncateCheckpoint lowers tp's checkpoint to offset if it is above
// (the log was truncated; Kafka's maybeTruncateCheckpoint).
func (cm *cleanerManager) maybeTruncateCheckpoint(dir string, tp TopicPartition, offset int64) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if off, ok := cm.checkpoints[dir][tp]; ok && off > offset {
		cm.updateCheckpointsLocked(dir, &checkpointEntry{tp, offset}, nil)
	}
}

// removeCheckpoint forgets tp (its log is deleted).
func (cm *cleanerManager) removeCheckpoint(dir string, tp TopicPartition) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if _, ok := cm.checkpoints[dir][tp]; ok {
		cm.updateCheckpointsLocked(dir, nil, &tp)
	}
}

func (cm *cleanerManager) markPartitionUncleanable(dir string, tp TopicPartition) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if cm.uncleanable[dir] == nil {
		cm.uncleanable[dir] = make(map[TopicPartition]bool)
	}
	cm.uncleanable[dir][tp] = true
}

// maintainUncleanablePartitions forgets uncleanable partitions whose log
// is gone (Kafka's maintainUncleanablePartitions).
func (cm *cleanerManager) maintainUncleanablePartitions() {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if len(cm.uncleanable) == 0 {
		return
	}
	live := make(map[TopicPartition]string)
	for _, l := range cm.logs() {
		live[l.tp] = logDirOf(l)
	}
	for dir, tps := range cm.uncleanable {
		for tp := range tps {
			if live[tp] != dir {
				delete(tps, tp)
			}
		}
		if len(tps) == 0 {
			delete(cm.uncleanable, dir)
		}
	}
}
