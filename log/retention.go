package log

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DeleteOldSegments applies retention (Kafka's UnifiedLog.deleteOldSegments):
// segments wholly below the log start offset always; with cleanup.policy
// delete also segments past retention.ms (by their largest timestamp) and
// the oldest segments while the log is over retention.bytes. Only segments
// wholly below the high watermark go; the active segment is rolled first
// if it must go too. It returns the number of segments deleted.
func (l *Log) DeleteOldSegments() (int, error) {
	l.replaceMu.Lock()
	defer l.replaceMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return 0, err
	}
	n, err := l.deleteLogStartOffsetBreached()
	if err != nil || !l.cfg.Delete() {
		return n, err
	}
	retentionMs, retentionBytes := l.cfg.localRetention()
	if retentionMs >= 0 {
		now := l.now().UnixMilli()
		m, err := l.deleteSegmentsMatching(func(s, next *Segment) bool {
			return now-s.largestTimestamp() > retentionMs && l.copiedToRemote(next)
		}, "retention.ms")
		n += m
		if err != nil {
			return n, err
		}
	}
	if retentionBytes >= 0 {
		l.segMu.RLock()
		diff := l.size - retentionBytes
		l.segMu.RUnlock()
		m, err := l.deleteSegmentsMatching(func(s, next *Segment) bool {
			if !l.copiedToRemote(next) {
				return false
			}
			if diff-s.size >= 0 {
				diff -= s.size
				return true
			}
			return false
		}, "retention.bytes")
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (l *Log) deleteLogStartOffsetBreached() (int, error) {
	return l.deleteSegmentsMatching(func(_, next *Segment) bool {
		return next != nil && next.baseOffset <= l.logStart
	}, "log start offset")
}

// deleteSegmentsMatching deletes the leading segments for which pred holds
// (Kafka's deletableSegments + deleteSegments); l.mu held.
func (l *Log) deleteSegmentsMatching(pred func(s, next *Segment) bool, reason string) (int, error) {
	l.segMu.RLock()
	segs, hw, leo := l.segs, l.hw, l.leo
	l.segMu.RUnlock()
	n := 0
	for i, s := range segs {
		var next *Segment
		upper := leo
		if i+1 < len(segs) {
			next = segs[i+1]
			upper = next.baseOffset
		}
		if next == nil && s.size == 0 {
			break // never the empty active segment
		}
		if hw < upper || !pred(s, next) {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(segs) {
		// There must always be a segment: roll first.
		if _, err := l.roll(l.now()); err != nil {
			return 0, err
		}
	}
	l.segMu.Lock()
	doomed := l.segs[:n]
	l.segs = append([]*Segment(nil), l.segs[n:]...)
	for _, s := range doomed {
		l.size -= s.size
	}
	l.moveLocalStartLocked(l.segs[0].baseOffset)
	if l.hw < l.logStart {
		l.hw = l.logStart
	}
	l.pruneUnreplicatedLocked(l.logStart)
	logStart := l.logStartLocked()
	l.segMu.Unlock()
	if err := l.epochs.truncateFromStart(logStart); err != nil {
		l.logger.Warn("writing leader-epoch-checkpoint failed", "partition", l.tp.String(), "err", err)
	}
	for _, s := range doomed {
		l.logger.Info("deleting segment", "partition", l.tp.String(), "base_offset", s.baseOffset, "reason", reason, "log_start_offset", logStart)
		if err := l.asyncDeleteSegment(s); err != nil {
			return n, err
		}
		// Its producer snapshot goes with it (Kafka's
		// deleteProducerSnapshots); the state stays in memory and in
		// the newer snapshots.
		l.deleteSnapshotAsync(s.baseOffset)
	}
	return n, nil
}

// asyncDeleteSegment renames a segment's files .deleted and schedules
// closing and removing them after file.delete.delay.ms, so readers still
// sending from them are not cut off (Kafka's deleteSegmentFiles).
func (l *Log) asyncDeleteSegment(s *Segment) error {
	if err := s.renameDeleted(); err != nil {
		return fmt.Errorf("%w: renaming deleted segment %s: %w", kerr.KafkaStorageError, s.logPath(), err)
	}
	del := func() {
		if err := s.deleteFiles(); err != nil {
			l.logger.Warn("removing deleted segment failed", "partition", l.tp.String(), "base_offset", s.baseOffset, "err", err)
		}
	}
	if l.scheduleDelete == nil {
		del()
		return nil
	}
	l.scheduleDelete(time.Duration(l.cfg.FileDeleteDelayMs)*time.Millisecond, del)
	return nil
}

// DeleteRecordsBefore moves the log start offset up to offset (the
// DeleteRecords API; -1 means the high watermark) and deletes the segments
// wholly below it. offset must be <= the high watermark, else an error
// wrapping kerr.OffsetOutOfRange. It returns the new log start offset
// (the low watermark).
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.replaceMu.Lock()
	defer l.replaceMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return 0, err
	}
	l.segMu.Lock()
	if offset == -1 {
		offset = l.hw
	}
	if offset < 0 || offset > l.hw {
		start, hw := l.logStartLocked(), l.hw
		l.segMu.Unlock()
		return start, fmt.Errorf("%w: cannot delete records of %s before %d: high watermark is %d", kerr.OffsetOutOfRange, l.tp, offset, hw)
	}
	moved := l.moveLogStartLocked(offset)
	if moved {
		l.pruneUnreplicatedLocked(l.logStart)
	}
	start := l.logStartLocked()
	l.segMu.Unlock()
	if moved {
		if err := l.epochs.truncateFromStart(start); err != nil {
			l.logger.Warn("writing leader-epoch-checkpoint failed", "partition", l.tp.String(), "err", err)
		}
		if _, err := l.deleteLogStartOffsetBreached(); err != nil {
			return start, err
		}
	}
	return start, nil
}
