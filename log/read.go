package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/twmb/franz-go/pkg/kerr"
)

// FileSlice is a range of a segment file. Its bytes are whole batches.
type FileSlice struct {
	File *os.File
	Pos  int64
	Size int64

	ra io.ReaderAt // used when File is nil (an FS without *os.File)
	b  []byte      // the bytes themselves, for a BytesSlice
}

func (fs FileSlice) readerAt() io.ReaderAt {
	if fs.File != nil {
		return fs.File
	}
	return fs.ra
}

// Sub is the part of the slice from off (relative to its start) of n
// bytes, cut to the slice's end.
func (fs FileSlice) Sub(off, n int64) FileSlice {
	off = min(max(off, 0), fs.Size)
	n = min(max(n, 0), fs.Size-off)
	sub := FileSlice{File: fs.File, Pos: fs.Pos + off, Size: n, ra: fs.ra}
	if fs.b != nil {
		sub.b = fs.b[sub.Pos : sub.Pos+n]
		sub.ra, sub.Pos = bytes.NewReader(sub.b), 0
	}
	return sub
}

// ReadInto appends the slice's bytes to dst (pread: no shared file
// position) and returns the extended slice.
func (fs FileSlice) ReadInto(dst []byte) ([]byte, error) {
	if fs.Size == 0 {
		return dst, nil
	}
	n := len(dst)
	dst = append(dst, make([]byte, fs.Size)...)
	r := fs.readerAt()
	if r == nil {
		return dst[:n], errors.New("log: file slice has no file")
	}
	m, err := r.ReadAt(dst[n:], fs.Pos)
	if int64(m) == fs.Size {
		err = nil
	} else if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return dst[:n+m], err
}

// WriteTo copies the slice to w from a section reader at an explicit file
// offset, so concurrent readers of one file never share a file position.
// (The socket server sends fetch data with sendfile itself: the log knows
// nothing of the network.)
func (fs FileSlice) WriteTo(w io.Writer) (int64, error) {
	if fs.Size == 0 {
		return 0, nil
	}
	r := fs.readerAt()
	if r == nil {
		return 0, errors.New("log: file slice has no file")
	}
	return io.Copy(w, io.NewSectionReader(r, fs.Pos, fs.Size))
}

// FetchData is the result of a read.
type FetchData struct {
	Records FileSlice
	// FirstBatchOffset is the base offset of the first batch returned (-1
	// if none).
	FirstBatchOffset int64
	// FetchOffsetMetadata is where the offset read from is (Kafka's
	// fetchOffsetMetadata): the position of the batch holding it, or
	// the end of the active segment for the log end offset. A
	// DelayedFetch compares it with the high watermark's position.
	FetchOffsetMetadata LogOffsetMetadata
	// NextOffset is the offset after the last batch returned (-1 if
	// none).
	NextOffset int64
	// AbortedTransactions are, for ReadCommitted, the aborted
	// transactions overlapping the batches returned (empty, not nil);
	// nil for Read.
	AbortedTransactions []AbortedTxn
}

func offsetOutOfRange(tp TopicPartition, offset, start, end int64) error {
	return fmt.Errorf("%w: offset %d of %s is outside [%d, %d]", kerr.OffsetOutOfRange, offset, tp, start, end)
}

func (s *Segment) slice(pos, size int64) FileSlice {
	fs := FileSlice{File: s.osf, Pos: pos, Size: size}
	if s.osf == nil {
		fs.ra = s.log
	}
	return fs
}

// Read reads whole batches starting at the batch that holds offset, at most
// maxBytes (but the first batch whole if minOneMessage, KIP-74), never a
// batch reaching maxOffset (exclusive; the high watermark for consumers).
// Offset below the log start or above the log end: an error wrapping
// kerr.OffsetOutOfRange; offset at the log end: an empty slice.
//
// Safe concurrently with appends: it sees only committed batches. It holds
// segMu.RLock only to find the segment and position; the header scan runs
// without locks.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneMessage bool) (FetchData, error) {
	buf := make([]byte, BatchHeaderSize)
	for {
		l.segMu.RLock()
		start, end := l.logStart, l.leo
		if offset < start || offset > end {
			first := l.logStartLocked()
			l.segMu.RUnlock()
			err := offsetOutOfRange(l.tp, offset, first, end)
			if offset >= first && offset < start {
				err = movedToTieredStorage(l.tp, offset, first, start)
			}
			return FetchData{FirstBatchOffset: -1, NextOffset: -1, FetchOffsetMetadata: UnknownOffsetMetadata}, err
		}
		if len(l.segs) == 0 {
			l.segMu.RUnlock()
			return FetchData{FirstBatchOffset: -1, NextOffset: -1, FetchOffsetMetadata: UnknownOffsetMetadata}, fmt.Errorf("%w: log %s is closed", kerr.NotLeaderForPartition, l.tp)
		}
		i := max(l.segmentFloor(offset), 0)
		seg := l.segs[i]
		if offset == end {
			act := l.active()
			empty := act.slice(act.size, 0)
			meta := LogOffsetMetadata{MessageOffset: offset, SegmentBaseOffset: act.baseOffset, RelativePosition: act.size}
			l.segMu.RUnlock()
			return FetchData{Records: empty, FirstBatchOffset: -1, NextOffset: -1, FetchOffsetMetadata: meta}, nil
		}
		// An offset at or past maxOffset (the high watermark) but below
		// the log end reads nothing, but its position is still looked
		// up: a delayed fetch counts the bytes from there to the high
		// watermark, so it must not start from the log end.
		committed := seg.size
		startPos := int64(seg.offIdx.Lookup(offset).Position)
		var next *Segment
		if i+1 < len(l.segs) {
			next = l.segs[i+1]
		}
		l.segMu.RUnlock()

		pos, h, found, err := seg.findBatch(offset, startPos, committed, buf)
		if err != nil {
			return FetchData{FirstBatchOffset: -1, NextOffset: -1, FetchOffsetMetadata: UnknownOffsetMetadata}, fmt.Errorf("%w: reading %s: %w", kerr.KafkaStorageError, seg.logPath(), err)
		}
		if !found {
			if next == nil {
				// Raced with nothing to read: the segment ends before offset.
				meta := LogOffsetMetadata{MessageOffset: offset, SegmentBaseOffset: seg.baseOffset, RelativePosition: committed}
				return FetchData{Records: seg.slice(committed, 0), FirstBatchOffset: -1, NextOffset: -1, FetchOffsetMetadata: meta}, nil
			}
			offset = max(offset, next.baseOffset)
			continue
		}
		meta := LogOffsetMetadata{MessageOffset: offset, SegmentBaseOffset: seg.baseOffset, RelativePosition: pos}
		if offset >= maxOffset || h.LastOffset() >= maxOffset {
			return FetchData{Records: seg.slice(pos, 0), FirstBatchOffset: -1, NextOffset: -1, FetchOffsetMetadata: meta}, nil
		}
		size := int64(h.TotalSize())
		if size > int64(maxBytes) && !minOneMessage {
			return FetchData{Records: seg.slice(pos, 0), FirstBatchOffset: -1, NextOffset: -1, FetchOffsetMetadata: meta}, nil
		}
		// Extend with whole batches while they fit and stay below maxOffset.
		nextOff := h.NextOffset()
		for p := pos + size; p < committed && size < int64(maxBytes); {
			nh, err := seg.readHeader(p, buf)
			if err != nil {
				break
			}
			ns := int64(nh.TotalSize())
			if size+ns > int64(maxBytes) || nh.LastOffset() >= maxOffset || p+ns > committed {
				break
			}
			size += ns
			p += ns
			nextOff = nh.NextOffset()
		}
		return FetchData{Records: seg.slice(pos, size), FirstBatchOffset: h.BaseOffset, FetchOffsetMetadata: meta, NextOffset: nextOff}, nil
	}
}

// BytesSlice is a FileSlice over bytes in memory: batches read from
// remote storage, sent like any other.
func BytesSlice(b []byte) FileSlice {
	return FileSlice{Size: int64(len(b)), ra: bytes.NewReader(b), b: b}
}

// Bytes returns the bytes of a BytesSlice, without copying them; false
// for a slice of a file.
func (fs FileSlice) Bytes() ([]byte, bool) {
	return fs.b, fs.b != nil
}
