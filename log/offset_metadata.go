package log

import (
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
)

// LogOffsetMetadata is an offset together with where it is in the log
// (Kafka's LogOffsetMetadata): the base offset of the segment holding it
// and the byte position, in that segment, of the batch that holds it (or
// of the end of the segment for the log end offset). A DelayedFetch
// compares the metadata of its fetch offset with the high watermark's to
// know how many bytes have become readable, without reading the log.
type LogOffsetMetadata struct {
	MessageOffset     int64
	SegmentBaseOffset int64 // -1: unknown (message offset only)
	RelativePosition  int64 // bytes from the start of the segment file
}

// UnknownOffsetMetadata is Kafka's UNKNOWN_OFFSET_METADATA.
var UnknownOffsetMetadata = LogOffsetMetadata{MessageOffset: -1, SegmentBaseOffset: -1, RelativePosition: -1}

// MessageOffsetOnly reports whether the position is unknown.
func (m LogOffsetMetadata) MessageOffsetOnly() bool { return m.SegmentBaseOffset < 0 }

// OnOlderSegment reports whether m is on a segment before that's. Both
// positions must be known.
func (m LogOffsetMetadata) OnOlderSegment(that LogOffsetMetadata) bool {
	return m.SegmentBaseOffset < that.SegmentBaseOffset
}

// OnSameSegment reports whether m and that are on the same segment.
func (m LogOffsetMetadata) OnSameSegment(that LogOffsetMetadata) bool {
	return m.SegmentBaseOffset == that.SegmentBaseOffset
}

// PositionDiff is the number of bytes from that to m, both on the same
// segment.
func (m LogOffsetMetadata) PositionDiff(that LogOffsetMetadata) int64 {
	return m.RelativePosition - that.RelativePosition
}

func (m LogOffsetMetadata) String() string {
	return fmt.Sprintf("(offset=%d segment=%d position=%d)", m.MessageOffset, m.SegmentBaseOffset, m.RelativePosition)
}

// LogOffsetSnapshot is the log's offsets at one moment, with their
// positions (Kafka's LogOffsetSnapshot).
type LogOffsetSnapshot struct {
	LogStartOffset int64
	LogEndOffset   LogOffsetMetadata
	HighWatermark  LogOffsetMetadata
	// LastStableOffset is at or below HighWatermark: below it while a
	// transaction is open there.
	LastStableOffset LogOffsetMetadata
}

// hwMetadataCache is the high watermark's metadata when it is below the
// log end, computed once per high watermark (Kafka keeps
// highWatermarkMetadata the same way). seg identifies the segment object,
// so a segment replaced by the cleaner or truncated away is not trusted.
type hwMetadataCache struct {
	meta LogOffsetMetadata
	seg  *Segment
}

// FetchOffsetSnapshot returns the log start, the log end, the high
// watermark and the last stable offset with their positions (Kafka's
// fetchOffsetSnapshot). The log end's position is the active segment's
// committed size; the high watermark's is the same when it equals the log
// end (always so on one node), else the position of the batch starting at
// it, found through the offset index and cached until the high watermark
// moves. The last stable offset's is found the same way when it is below
// the high watermark (an open transaction), with its own cache.
func (l *Log) FetchOffsetSnapshot() (LogOffsetSnapshot, error) {
	l.segMu.RLock()
	if len(l.segs) == 0 {
		l.segMu.RUnlock()
		return LogOffsetSnapshot{}, fmt.Errorf("%w: log %s is closed", kerr.NotLeaderForPartition, l.tp)
	}
	act := l.active()
	snap := LogOffsetSnapshot{
		LogStartOffset: l.logStart,
		LogEndOffset:   LogOffsetMetadata{MessageOffset: l.leo, SegmentBaseOffset: act.baseOffset, RelativePosition: act.size},
	}
	hw, lso := l.hw, l.lastStableOffsetLocked()
	l.segMu.RUnlock()
	var err error
	if snap.HighWatermark, err = l.offsetMetadata(hw, snap.LogEndOffset, &l.hwMeta); err != nil {
		return LogOffsetSnapshot{}, err
	}
	snap.LastStableOffset = snap.HighWatermark
	if lso != hw {
		if snap.LastStableOffset, err = l.offsetMetadata(lso, snap.LogEndOffset, &l.lsoMeta); err != nil {
			return LogOffsetSnapshot{}, err
		}
	}
	return snap, nil
}

// offsetMetadata is the position of off: end's if off is the log end
// offset, else that of the batch holding off, cached in cache.
func (l *Log) offsetMetadata(off int64, end LogOffsetMetadata, cache *hwMetaPtr) (LogOffsetMetadata, error) {
	if off == end.MessageOffset {
		return end, nil
	}
	l.segMu.RLock()
	if len(l.segs) == 0 {
		l.segMu.RUnlock()
		return LogOffsetMetadata{}, fmt.Errorf("%w: log %s is closed", kerr.NotLeaderForPartition, l.tp)
	}
	seg := l.segs[max(l.segmentFloor(off), 0)]
	if c := cache.Load(); c != nil && c.seg == seg && c.meta.MessageOffset == off {
		l.segMu.RUnlock()
		return c.meta, nil
	}
	committed := seg.size
	startPos := int64(seg.offIdx.Lookup(off).Position)
	l.segMu.RUnlock()

	pos, _, found, err := seg.findBatch(off, startPos, committed, make([]byte, BatchHeaderSize))
	if err != nil {
		return LogOffsetMetadata{}, fmt.Errorf("%w: reading %s: %w", kerr.KafkaStorageError, seg.logPath(), err)
	}
	if !found {
		pos = committed
	}
	meta := LogOffsetMetadata{MessageOffset: off, SegmentBaseOffset: seg.baseOffset, RelativePosition: pos}
	cache.Store(&hwMetadataCache{meta: meta, seg: seg})
	return meta, nil
}

// hwMetaPtr is the type of Log.hwMeta (an atomic pointer, so the cache is
// written under segMu.RLock by concurrent readers).
type hwMetaPtr = atomic.Pointer[hwMetadataCache]
