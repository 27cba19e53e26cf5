package log

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Entry sizes of the two indexes, as Kafka lays them out.
const (
	OffsetIndexEntrySize = 8  // 4-byte relative offset, 4-byte position
	TimeIndexEntrySize   = 12 // 8-byte timestamp, 4-byte relative offset
)

// OffsetPosition is an offset index entry, with the offset absolute.
type OffsetPosition struct {
	Offset   int64
	Position int32
}

// TimestampOffsetEntry is a time index entry, with the offset absolute.
type TimestampOffsetEntry struct {
	Timestamp int64
	Offset    int64
}

type offsetEntry struct{ rel, pos uint32 }

type timeEntry struct {
	ts  int64
	rel uint32
}

// OffsetIndex is a segment's sparse offset index (Kafka's OffsetIndex):
// entries map the last offset of a batch to the batch's position in the
// .log file, one every index.interval.bytes. Entries are kept in memory and
// written to the file (preallocated to segment.index.bytes, trimmed when
// the segment stops being active) on flush, roll and close.
//
// Not safe for concurrent use; the Log guards it (see doc.go).
type OffsetIndex struct {
	baseOffset int64
	maxEntries int
	entries    []offsetEntry
	written    int // entries already written to file
	path       string
}

func newOffsetIndex(baseOffset int64, maxIndexBytes int32) *OffsetIndex {
	return &OffsetIndex{baseOffset: baseOffset, maxEntries: maxEntriesOf(maxIndexBytes, OffsetIndexEntrySize)}
}

func maxEntriesOf(maxIndexBytes int32, entrySize int) int {
	n := int(maxIndexBytes) / entrySize
	if n < 2 {
		n = 2
	}
	return n
}

// Entries is the number of entries.
func (ix *OffsetIndex) Entries() int { return len(ix.entries) }

// MaxEntries is the capacity.
func (ix *OffsetIndex) MaxEntries() int { return ix.maxEntries }

// IsFull reports whether no entry can be added.
func (ix *OffsetIndex) IsFull() bool { return len(ix.entries) >= ix.maxEntries }

// Entry returns entry i with its offset absolute.
func (ix *OffsetIndex) Entry(i int) OffsetPosition {
	e := ix.entries[i]
	return OffsetPosition{Offset: ix.baseOffset + int64(e.rel), Position: int32(e.pos)}
}

// LastOffset is the offset of the last entry, or the base offset if none.
func (ix *OffsetIndex) LastOffset() int64 {
	if len(ix.entries) == 0 {
		return ix.baseOffset
	}
	return ix.baseOffset + int64(ix.entries[len(ix.entries)-1].rel)
}

// Append adds an entry. Offsets and positions must grow strictly.
func (ix *OffsetIndex) Append(offset int64, position int32) error {
	rel := offset - ix.baseOffset
	if rel < 0 || rel > math.MaxInt32 {
		return fmt.Errorf("%w: offset %d does not fit the index of base offset %d", kerr.CorruptMessage, offset, ix.baseOffset)
	}
	if n := len(ix.entries); n > 0 {
		if last := ix.entries[n-1]; uint32(rel) <= last.rel || uint32(position) <= last.pos {
			return fmt.Errorf("%w: index entry (%d, %d) does not follow (%d, %d)", kerr.CorruptMessage, offset, position, ix.baseOffset+int64(last.rel), last.pos)
		}
	}
	if ix.IsFull() {
		return fmt.Errorf("%w: offset index of base offset %d is full", kerr.KafkaStorageError, ix.baseOffset)
	}
	ix.entries = append(ix.entries, offsetEntry{rel: uint32(rel), pos: uint32(position)})
	return nil
}

// Lookup returns the entry with the largest offset <= target, or the base
// offset at position 0 if there is none (Kafka's OffsetIndex.lookup).
func (ix *OffsetIndex) Lookup(target int64) OffsetPosition {
	rel := target - ix.baseOffset
	if rel < 0 || len(ix.entries) == 0 {
		return OffsetPosition{Offset: ix.baseOffset, Position: 0}
	}
	if rel > math.MaxUint32 {
		rel = math.MaxUint32
	}
	r := uint32(rel)
	// First entry with rel > r, minus one.
	i := sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].rel > r }) - 1
	if i < 0 {
		return OffsetPosition{Offset: ix.baseOffset, Position: 0}
	}
	return ix.Entry(i)
}

// truncateToEntries keeps the first n entries. It reallocates so that
// slices captured by concurrent readers are never written again.
func (ix *OffsetIndex) truncateToEntries(n int) {
	if n >= len(ix.entries) {
		return
	}
	ix.entries = append([]offsetEntry(nil), ix.entries[:n]...)
	if ix.written > n {
		ix.written = n
	}
}

// encode appends entries [from, to) in the file layout.
func (ix *OffsetIndex) encode(dst []byte, from, to int) []byte {
	for _, e := range ix.entries[from:to] {
		dst = binary.BigEndian.AppendUint32(dst, e.rel)
		dst = binary.BigEndian.AppendUint32(dst, e.pos)
	}
	return dst
}

// decodeOffsetIndex parses an index file's bytes. A preallocated file has a
// zero tail: the first all-zero entry ends the index (a real entry never
// has position 0, as the first batch of a segment is never indexed). It
// returns an error if the file is corrupt: size not a multiple of the
// entry size, or entries not strictly increasing.
func decodeOffsetIndex(b []byte) ([]offsetEntry, error) {
	if len(b)%OffsetIndexEntrySize != 0 {
		return nil, fmt.Errorf("offset index size %d is not a multiple of %d", len(b), OffsetIndexEntrySize)
	}
	var out []offsetEntry
	for i := 0; i+OffsetIndexEntrySize <= len(b); i += OffsetIndexEntrySize {
		e := offsetEntry{rel: binary.BigEndian.Uint32(b[i:]), pos: binary.BigEndian.Uint32(b[i+4:])}
		if e.rel == 0 && e.pos == 0 {
			break
		}
		if e.pos > math.MaxInt32 || e.rel > math.MaxInt32 {
			return nil, fmt.Errorf("offset index entry %d out of range", i/OffsetIndexEntrySize)
		}
		if n := len(out); n > 0 && (e.rel <= out[n-1].rel || e.pos <= out[n-1].pos) {
			return nil, fmt.Errorf("offset index entry %d (%d, %d) does not follow (%d, %d)", n, e.rel, e.pos, out[n-1].rel, out[n-1].pos)
		}
		out = append(out, e)
	}
	return out, nil
}

// TimeIndex is a segment's sparse time index (Kafka's TimeIndex): entries
// map the largest timestamp so far to the offset of the batch holding it,
// appended alongside offset index entries when the timestamp grew, and once
// more when the segment stops being active.
//
// Not safe for concurrent use; the Log guards it.
type TimeIndex struct {
	baseOffset int64
	maxEntries int
	entries    []timeEntry
	written    int
	path       string
}

func newTimeIndex(baseOffset int64, maxIndexBytes int32) *TimeIndex {
	return &TimeIndex{baseOffset: baseOffset, maxEntries: maxEntriesOf(maxIndexBytes, TimeIndexEntrySize)}
}

// Entries is the number of entries.
func (ix *TimeIndex) Entries() int { return len(ix.entries) }

// IsFull reports whether the index is full. As in Kafka, one slot is kept
// for the entry appended when the segment becomes inactive.
func (ix *TimeIndex) IsFull() bool { return len(ix.entries) >= ix.maxEntries-1 }

// Entry returns entry i with its offset absolute.
func (ix *TimeIndex) Entry(i int) TimestampOffsetEntry {
	e := ix.entries[i]
	return TimestampOffsetEntry{Timestamp: e.ts, Offset: ix.baseOffset + int64(e.rel)}
}

// LastEntry returns the last entry, or (-1, base offset) if none.
func (ix *TimeIndex) LastEntry() TimestampOffsetEntry {
	if len(ix.entries) == 0 {
		return TimestampOffsetEntry{Timestamp: -1, Offset: ix.baseOffset}
	}
	return ix.Entry(len(ix.entries) - 1)
}

// MaybeAppend adds (ts, offset) if ts is larger than the last entry's
// timestamp (Kafka's TimeIndex.maybeAppend). skipFullCheck is for the
// final entry of a segment.
func (ix *TimeIndex) MaybeAppend(ts, offset int64, skipFullCheck bool) error {
	if !skipFullCheck && ix.IsFull() {
		return fmt.Errorf("%w: time index of base offset %d is full", kerr.KafkaStorageError, ix.baseOffset)
	}
	if len(ix.entries) >= ix.maxEntries {
		return nil
	}
	rel := offset - ix.baseOffset
	if rel < 0 || rel > math.MaxInt32 {
		return fmt.Errorf("%w: offset %d does not fit the time index of base offset %d", kerr.CorruptMessage, offset, ix.baseOffset)
	}
	if n := len(ix.entries); n > 0 {
		last := ix.entries[n-1]
		if ts <= last.ts {
			return nil
		}
		if uint32(rel) < last.rel {
			return fmt.Errorf("%w: time index offset %d below last %d", kerr.CorruptMessage, offset, ix.baseOffset+int64(last.rel))
		}
	}
	ix.entries = append(ix.entries, timeEntry{ts: ts, rel: uint32(rel)})
	return nil
}

// Lookup returns the entry with the largest timestamp <= ts, or
// (-1, base offset) if none (Kafka's TimeIndex.lookup).
func (ix *TimeIndex) Lookup(ts int64) TimestampOffsetEntry {
	i := sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].ts > ts }) - 1
	if i < 0 {
		return TimestampOffsetEntry{Timestamp: -1, Offset: ix.baseOffset}
	}
	return ix.Entry(i)
}

// truncateTo drops entries whose offset is >= offset.
func (ix *TimeIndex) truncateTo(offset int64) {
	rel := offset - ix.baseOffset
	n := sort.Search(len(ix.entries), func(i int) bool { return int64(ix.entries[i].rel) >= rel })
	if n < len(ix.entries) {
		ix.entries = append([]timeEntry(nil), ix.entries[:n]...)
		if ix.written > n {
			ix.written = n
		}
	}
}

func (ix *TimeIndex) encode(dst []byte, from, to int) []byte {
	for _, e := range ix.entries[from:to] {
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.ts))
		dst = binary.BigEndian.AppendUint32(dst, e.rel)
	}
	return dst
}

// decodeTimeIndex parses a time index file. An all-zero entry ends it
// (preallocated tail); timestamps must grow strictly and offsets must not
// go back.
func decodeTimeIndex(b []byte) ([]timeEntry, error) {
	if len(b)%TimeIndexEntrySize != 0 {
		return nil, fmt.Errorf("time index size %d is not a multiple of %d", len(b), TimeIndexEntrySize)
	}
	var out []timeEntry
	for i := 0; i+TimeIndexEntrySize <= len(b); i += TimeIndexEntrySize {
		e := timeEntry{ts: int64(binary.BigEndian.Uint64(b[i:])), rel: binary.BigEndian.Uint32(b[i+8:])}
		if e.ts == 0 && e.rel == 0 {
			break
		}
		if e.rel > math.MaxInt32 {
			return nil, fmt.Errorf("time index entry %d out of range", i/TimeIndexEntrySize)
		}
		if n := len(out); n > 0 && (e.ts <= out[n-1].ts || e.rel < out[n-1].rel) {
			return nil, fmt.Errorf("time index entry %d (%d, %d) does not follow (%d, %d)", n, e.ts, e.rel, out[n-1].ts, out[n-1].rel)
		}
		out = append(out, e)
	}
	return out, nil
}
