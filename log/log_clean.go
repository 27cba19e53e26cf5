package log

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The log's side of compaction: what the cleaner reads of a log, and the
// crash-safe swap of a cleaned segment in place of the segments it
// replaces (Kafka's UnifiedLog.replaceSegments and
// LocalLog.replaceSegments). The cleaner itself is in cleaner*.go.

// errLogChanged reports that the log changed under the cleaner (its
// segments were deleted, truncated or replaced, or it was closed or
// deleted): the cleaned segment is dropped and cleaning retried later.
var errLogChanged = errors.New("log changed during cleaning")

// swapSuffixes are the files of a cleaned segment, renamed .cleaned →
// .swap → final in this order (Kafka's changeFileSuffixes: the log first).
// Index files that were not written are skipped.
var swapSuffixes = []string{LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix, TxnIndexFileSuffix}

// segView is one segment as the cleaner saw it.
type segView struct {
	seg          *Segment
	base         int64
	size         int64 // committed size; fixed for a non-active segment
	maxTs        int64
	firstBatchTs int64
	offIdxBytes  int64
	timeIdxBytes int64
}

// logView is a log as the cleaner saw it at one instant.
type logView struct {
	segs     []segView // in offset order; the last is the active segment
	logStart int64
	leo      int64
	lso      int64 // last stable offset: where cleaning must stop
	cfg      Config
	dir      string
}

// cleanerView captures what the cleaner needs of the log. It takes l.mu
// only to read the config.
func (l *Log) cleanerView() logView {
	cfg := l.Config()
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	v := logView{segs: make([]segView, len(l.segs)), logStart: l.logStart, leo: l.leo, lso: l.lastStableOffsetLocked(), cfg: cfg, dir: l.dir}
	for i, s := range l.segs {
		v.segs[i] = segView{
			seg: s, base: s.baseOffset, size: s.size, maxTs: s.maxTs, firstBatchTs: s.firstBatchTs,
			offIdxBytes:  int64(len(s.offIdx.entries) * OffsetIndexEntrySize),
			timeIdxBytes: int64(len(s.timeIdx.entries) * TimeIndexEntrySize),
		}
	}
	return v
}

// activeBase is the base offset of the active segment.
func (v *logView) activeBase() int64 { return v.segs[len(v.segs)-1].base }

// floor is the index of the last segment whose base is <= offset (0 if
// offset is below every segment).
func (v *logView) floor(offset int64) int {
	i := 0
	for i+1 < len(v.segs) && v.segs[i+1].base <= offset {
		i++
	}
	return i
}

// overlapping returns the segments holding offsets in [from, to): from
// the floor of from up to the last one whose base is below to (Kafka's
// logSegments(from, to)).
func (v *logView) overlapping(from, to int64) []segView {
	var out []segView
	for i := v.floor(from); i < len(v.segs) && v.segs[i].base < to; i++ {
		out = append(out, v.segs[i])
	}
	return out
}

// nonActiveFrom returns the segments from the floor of from, without the
// active segment (Kafka's nonActiveLogSegmentsFrom).
func (v *logView) nonActiveFrom(from int64) []segView {
	i := v.floor(from)
	if i >= len(v.segs)-1 {
		return nil
	}
	return v.segs[i : len(v.segs)-1]
}

// lastRecordsOfActiveProducers returns, per producer the log knows, what
// the cleaner must keep to preserve its state (Kafka's
// UnifiedLog.lastRecordsOfActiveProducers).
func (l *Log) lastRecordsOfActiveProducers() map[int64]lastRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]lastRecord, len(l.pstate.producers))
	for pid, e := range l.pstate.producers {
		lr := lastRecord{lastDataOffset: -1, producerEpoch: e.epoch}
		if e.n > 0 {
			lr.lastDataOffset = e.batches[e.n-1].lastOffset
		}
		out[pid] = lr
	}
	return out
}

// noteTruncation records that the log was truncated to offset (Kafka's
// LogManager.truncateTo lowers the cleaner checkpoint there); l.mu held.
func (l *Log) noteTruncation(offset int64) {
	if !l.truncated || offset < l.truncatedTo {
		l.truncatedTo = offset
	}
	l.truncated = true
}

// takeTruncation returns, and forgets, the lowest offset the log was
// truncated to since the last call.
func (l *Log) takeTruncation() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	off, ok := l.truncatedTo, l.truncated
	l.truncated = false
	return off, ok
}

// writeCleanedTxnIndex writes the transaction index of a cleaned segment:
// the aborted transactions whose ABORT marker it keeps, in the .txnindex
// format, as "<base>.txnindex.cleaned", fsynced (swapped in with the
// segment; see swapSuffixes). With none, no file is written.
func writeCleanedTxnIndex(dest *Segment, txns []AbortedTxn) error {
	if len(txns) == 0 {
		return nil
	}
	path := segmentPath(dest.dir, dest.baseOffset, TxnIndexFileSuffix) + CleanedFileSuffix
	err := withIndexFile(dest.fsys, path, func(f File) error {
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.WriteAt(EncodeTxnIndex(txns), 0); err != nil {
			return err
		}
		return f.Sync()
	})
	if err != nil {
		return fmt.Errorf("log cleaner: writing %s: %w", path, err)
	}
	dest.txnIdx = txns
	return nil
}

// createCleanedSegment creates the files of a segment the cleaner writes:
// "<base>.log.cleaned" and its two index files, empty.
func createCleanedSegment(fsys FS, dir string, base int64, cfg Config, now time.Time) (*Segment, error) {
	s := &Segment{
		baseOffset: base, dir: dir, fsys: fsys, nextOffset: base,
		maxTs: -1, offsetOfMaxTs: base, firstBatchTs: -1, created: now,
		offIdx:  newOffsetIndex(base, cfg.SegmentIndexBytes),
		timeIdx: newTimeIndex(base, cfg.SegmentIndexBytes),
	}
	var err error
	if s.log, err = fsys.OpenFile(segmentPath(dir, base, LogFileSuffix)+CleanedFileSuffix, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644); err != nil {
		return nil, err
	}
	s.osf = s.log.OSFile()
	s.offIdx.path = segmentPath(dir, base, IndexFileSuffix) + CleanedFileSuffix
	s.timeIdx.path = segmentPath(dir, base, TimeIndexFileSuffix) + CleanedFileSuffix
	for _, p := range []string{s.offIdx.path, s.timeIdx.path} {
		if err := withIndexFile(fsys, p, func(f File) error { return f.Truncate(0) }); err != nil {
			s.deleteCleaned()
			return nil, err
		}
	}
	return s, nil
}

// finishCleaned writes the cleaned segment's indexes (with the final time
// index entry of a segment that is not active) and fsyncs its files, as
// Kafka flushes the cleaned segment before the swap.
func (s *Segment) finishCleaned() error {
	s.finalTimeIndexEntry()
	if err := s.flushIndexes(); err != nil {
		return err
	}
	return s.sync()
}

// deleteCleaned closes and removes a cleaned segment that will not be
// swapped in.
func (s *Segment) deleteCleaned() error {
	errs := []error{s.closeFiles()}
	for _, suffix := range swapSuffixes {
		for _, tail := range []string{CleanedFileSuffix, SwapFileSuffix} {
			if err := s.fsys.Remove(segmentPath(s.dir, s.baseOffset, suffix) + tail); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// renameSegmentFiles renames the files of the segment at base in dir from
// suffix from to suffix to, in swapSuffixes order, and returns how many it
// renamed; a missing index file is skipped, a missing log file is an
// error.
func renameSegmentFiles(fsys FS, dir string, base int64, from, to string) (int, error) {
	n := 0
	for _, suffix := range swapSuffixes {
		p := segmentPath(dir, base, suffix)
		if err := fsys.Rename(p+from, p+to); err != nil {
			if os.IsNotExist(err) && suffix != LogFileSuffix {
				continue
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// replaceSegments swaps cleaned in for olds, which must still be
// consecutive non-active segments of the log, unchanged since the cleaner
// read them (else errLogChanged: the caller deletes cleaned). Crash safety
// follows Kafka's replaceSegments, so a crash at any point leaves a whole
// log (see doc.go):
//
//  1. cleaned's files are renamed .cleaned → .swap (the log file first)
//     and the dir fsynced. Before the last rename a crash rolls the swap
//     back: start-up deletes .swap files at or above the lowest .cleaned
//     one, then every .cleaned file. After it, start-up completes the
//     swap: it deletes the segment files in the range of the .swap and
//     renames the .swap files.
//  2. The old segments' files are renamed .deleted. They stay open, so
//     readers still sending from them are not cut off.
//  3. The .swap files are renamed to their final names; dir fsynced.
//  4. The segment list is updated (segMu held only for that).
//  5. The old files are closed and removed after file.delete.delay.ms.
//
// replaceMu is held throughout, so retention, DeleteRecords and Close do
// not remove or touch the old segments meanwhile; l.mu (which appends
// need) is held only to check and to publish, never across the I/O.
//
// If the swap cannot start (the log changed, or the first rename failed)
// the cleaned segment is deleted and the log goes on as it was. A failure
// after that leaves the files half way: the log goes offline (as Kafka
// takes its log dir offline) and start-up completes or rolls back the swap.
func (l *Log) replaceSegments(cleaned *Segment, olds []segView) error {
	l.replaceMu.Lock()
	defer l.replaceMu.Unlock()
	l.mu.Lock()
	_, err := l.findReplaceable(olds)
	delay := time.Duration(l.cfg.FileDeleteDelayMs) * time.Millisecond
	l.mu.Unlock()
	if err != nil {
		cleaned.deleteCleaned()
		return err
	}
	dir, base := cleaned.dir, cleaned.baseOffset
	fail := func(err error) error {
		cleaned.closeFiles()
		l.mu.Lock()
		if l.failed == nil {
			l.failed = err
		}
		l.mu.Unlock()
		l.logger.Error("swapping in a cleaned segment failed; the log is offline until restart", "partition", l.tp.String(), "base_offset", base, "err", err)
		return fmt.Errorf("%w: swapping cleaned segment %d of %s: %w", kerr.KafkaStorageError, base, l.tp, err)
	}
	if renamed, err := renameSegmentFiles(l.fsys, dir, base, CleanedFileSuffix, SwapFileSuffix); err != nil {
		if renamed == 0 {
			cleaned.deleteCleaned()
			return fmt.Errorf("%w: renaming cleaned segment %d of %s: %w", kerr.KafkaStorageError, base, l.tp, err)
		}
		return fail(err)
	}
	if err := l.fsys.SyncDir(dir); err != nil {
		return fail(err)
	}
	for _, o := range olds {
		if err := o.seg.renameDeleted(); err != nil {
			return fail(err)
		}
	}
	if _, err := renameSegmentFiles(l.fsys, dir, base, SwapFileSuffix, ""); err != nil {
		return fail(err)
	}
	if err := l.fsys.SyncDir(dir); err != nil {
		return fail(err)
	}
	cleaned.offIdx.path = segmentPath(dir, base, IndexFileSuffix)
	cleaned.timeIdx.path = segmentPath(dir, base, TimeIndexFileSuffix)

	l.mu.Lock()
	i, err := l.findReplaceable(olds)
	if err != nil {
		l.mu.Unlock()
		return fail(fmt.Errorf("segments changed during the swap: %w", err))
	}
	l.segMu.Lock()
	segs := make([]*Segment, 0, len(l.segs)-len(olds)+1)
	segs = append(segs, l.segs[:i]...)
	segs = append(segs, cleaned)
	segs = append(segs, l.segs[i+len(olds):]...)
	l.segs = segs
	for _, o := range olds {
		l.size -= o.size
	}
	l.size += cleaned.size
	l.segMu.Unlock()
	l.mu.Unlock()
	for _, o := range olds {
		l.scheduleSegmentDeletion(o.seg, delay)
	}
	return nil
}

// findReplaceable returns the index of olds in the segment list, or
// errLogChanged if they are no longer there as the cleaner saw them; l.mu
// held.
func (l *Log) findReplaceable(olds []segView) (int, error) {
	if err := l.usable(); err != nil {
		return 0, fmt.Errorf("%w: %v", errLogChanged, err)
	}
	i := 0
	for i < len(l.segs) && l.segs[i] != olds[0].seg {
		i++
	}
	if i+len(olds) >= len(l.segs) { // not found, or reaching the active segment
		return 0, errLogChanged
	}
	for k, o := range olds {
		if s := l.segs[i+k]; s != o.seg || s.size != o.size {
			return 0, errLogChanged
		}
	}
	return i, nil
}

// scheduleSegmentDeletion closes and removes a segment's .deleted files
// after delay.
func (l *Log) scheduleSegmentDeletion(s *Segment, delay time.Duration) {
	del := func() {
		if err := s.deleteFiles(); err != nil {
			l.logger.Warn("removing deleted segment failed", "partition", l.tp.String(), "base_offset", s.baseOffset, "err", err)
		}
	}
	if l.scheduleDelete == nil {
		del()
		return
	}
	l.scheduleDelete(delay, del)
}
