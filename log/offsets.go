package log

import (
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Special ListOffsets timestamps.
const (
	LatestTimestamp        int64 = -1 // the log end offset
	EarliestTimestamp      int64 = -2 // the log start offset
	MaxTimestamp           int64 = -3 // the record with the largest timestamp (KIP-734)
	EarliestLocalTimestamp int64 = -4 // the local log start (KIP-405)
)

// TimestampOffset is a ListOffsets answer.
type TimestampOffset struct {
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}

// FetchOffsetByTimestamp finds the first offset whose timestamp is >= ts,
// through the time index (ok=false if there is none). Special timestamps:
// -1 latest, -2 earliest, -3 max timestamp, -4 earliest local. The caller
// bounds the answer by the high watermark (or last stable offset).
//
// The answer is record-exact: the batch found is decompressed if needed
// (Kafka's searchForTimestamp).
func (l *Log) FetchOffsetByTimestamp(ts int64) (TimestampOffset, bool, error) {
	switch ts {
	case LatestTimestamp:
		l.mu.Lock()
		ep := l.epochs.latestEpoch()
		l.mu.Unlock()
		return TimestampOffset{Timestamp: -1, Offset: l.LogEndOffset(), LeaderEpoch: ep}, true, nil
	case EarliestTimestamp, EarliestLocalTimestamp:
		start := l.LogStartOffset()
		if ts == EarliestLocalTimestamp {
			start = l.LocalLogStartOffset()
		}
		l.mu.Lock()
		ep := l.epochs.epochForOffset(start)
		l.mu.Unlock()
		return TimestampOffset{Timestamp: -1, Offset: start, LeaderEpoch: ep}, true, nil
	case MaxTimestamp:
		return l.fetchMaxTimestamp()
	}
	if ts < 0 {
		return TimestampOffset{}, false, fmt.Errorf("%w: unsupported special timestamp %d", kerr.UnsupportedVersion, ts)
	}
	l.segMu.RLock()
	segs, logStart := l.segs, l.logStart
	l.segMu.RUnlock()
	for _, s := range segs {
		l.segMu.RLock()
		maxTs, committed := s.maxTs, s.size
		if maxTs < ts {
			l.segMu.RUnlock()
			continue
		}
		te := s.timeIdx.Lookup(ts)
		startPos := int64(s.offIdx.Lookup(max(te.Offset, logStart)).Position)
		l.segMu.RUnlock()
		to, ok, err := s.searchForTimestamp(ts, startPos, committed, logStart)
		if err != nil || ok {
			return to, ok, err
		}
	}
	return TimestampOffset{Timestamp: -1, Offset: -1, LeaderEpoch: -1}, false, nil
}

// searchForTimestamp scans batches from startPos for the first record with
// timestamp >= ts and offset >= minOffset (Kafka's
// FileRecords.searchForTimestamp).
func (s *Segment) searchForTimestamp(ts, startPos, end, minOffset int64) (TimestampOffset, bool, error) {
	hdr := make([]byte, BatchHeaderSize)
	for pos := startPos; pos < end; {
		h, err := s.readHeader(pos, hdr)
		if err != nil {
			return TimestampOffset{}, false, fmt.Errorf("%w: %w", kerr.KafkaStorageError, err)
		}
		if h.MaxTimestamp >= ts && h.LastOffset() >= minOffset {
			to := TimestampOffset{Timestamp: h.MaxTimestamp, Offset: max(h.BaseOffset, minOffset), LeaderEpoch: h.PartitionLeaderEpoch}
			batch, err := s.readBatch(pos, h)
			if err != nil {
				return TimestampOffset{}, false, err
			}
			// Record level; if the batch cannot be decoded the answer
			// stays its first offset and max timestamp.
			decodeRecordTimestamps(batch, func(off, rts int64) bool {
				if rts >= ts && off >= minOffset {
					to.Timestamp, to.Offset = rts, off
					return false
				}
				return true
			})
			return to, true, nil
		}
		pos += int64(h.TotalSize())
	}
	return TimestampOffset{}, false, nil
}

// TimestampInBatch answers a search by timestamp within one whole batch
// whose max timestamp is at least ts and whose last offset is at least
// minOffset: the first record there with timestamp >= ts and offset >=
// minOffset, or, if the records cannot be decoded, the batch's first such
// offset with its max timestamp (as the local search answers). Remote
// storage's search uses it.
func TimestampInBatch(batch []byte, ts, minOffset int64) (TimestampOffset, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return TimestampOffset{}, err
	}
	to := TimestampOffset{Timestamp: h.MaxTimestamp, Offset: max(h.BaseOffset, minOffset), LeaderEpoch: h.PartitionLeaderEpoch}
	decodeRecordTimestamps(batch, func(off, rts int64) bool {
		if rts >= ts && off >= minOffset {
			to.Timestamp, to.Offset = rts, off
			return false
		}
		return true
	})
	return to, nil
}

func (s *Segment) readBatch(pos int64, h BatchHeader) ([]byte, error) {
	b := make([]byte, h.TotalSize())
	if n, err := s.log.ReadAt(b, pos); n < len(b) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: reading batch at %d of %s: %w", kerr.KafkaStorageError, pos, s.logPath(), err)
	}
	return b, nil
}

// fetchMaxTimestamp answers MaxTimestamp (-3): the record with the largest
// timestamp (the first one with it).
func (l *Log) fetchMaxTimestamp() (TimestampOffset, bool, error) {
	l.segMu.RLock()
	var best *Segment
	for _, s := range l.segs {
		if s.maxTs >= 0 && (best == nil || s.maxTs > best.maxTs) {
			best = s
		}
	}
	if best == nil {
		l.segMu.RUnlock()
		return TimestampOffset{Timestamp: -1, Offset: -1, LeaderEpoch: -1}, false, nil
	}
	maxTs, off, committed := best.maxTs, best.offsetOfMaxTs, best.size
	startPos := int64(best.offIdx.Lookup(off).Position)
	l.segMu.RUnlock()
	return best.searchForTimestamp(maxTs, startPos, committed, 0)
}
