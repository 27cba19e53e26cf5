package log

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// File name suffixes, as Kafka names them.
const (
	LogFileSuffix       = ".log"
	IndexFileSuffix     = ".index"
	TimeIndexFileSuffix = ".timeindex"
	DeletedFileSuffix   = ".deleted"
	CleanedFileSuffix   = ".cleaned"
	SwapFileSuffix      = ".swap"
	SnapshotFileSuffix  = ".snapshot"
	TxnIndexFileSuffix  = ".txnindex"
)

// FilenamePrefixFromOffset is the zero-padded base offset segment files
// are named by.
func FilenamePrefixFromOffset(offset int64) string { return fmt.Sprintf("%020d", offset) }

// offsetFromFileName parses the base offset of a segment file name.
func offsetFromFileName(name string) (int64, bool) {
	i := strings.IndexByte(name, '.')
	if i != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(name[:i], 10, 64)
	return off, err == nil && off >= 0
}

// Segment is one segment of a log (Kafka's LogSegment): a .log file of
// whole batches starting at BaseOffset, plus its offset and time indexes.
//
// Mutating fields are written by the Log's appender with both Log.mu and
// Log.segMu held, and read by readers under Log.segMu (see doc.go).
type Segment struct {
	baseOffset int64
	dir        string
	fsys       FS

	log     File
	osf     *os.File
	offIdx  *OffsetIndex
	timeIdx *TimeIndex
	// txnIdx are the aborted transactions whose ABORT marker is in the
	// segment, in marker order (the .txnindex file; see txn_index.go).
	txnIdx []AbortedTxn

	size       int64 // committed bytes: readers never look past it
	nextOffset int64 // offset after the last batch (baseOffset if empty)
	// maxTs is the largest batch max timestamp so far (-1 if none) and
	// offsetOfMaxTs the last offset of the (first) batch that has it.
	maxTs         int64
	offsetOfMaxTs int64
	// firstBatchTs is the first batch's max timestamp (Kafka's
	// rollingBasedTimestamp), -1 if unknown.
	firstBatchTs int64
	created      time.Time
	rollJitterMs int64

	bytesSinceLastIndexEntry int
	closed                   bool
}

func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, FilenamePrefixFromOffset(base)+suffix)
}

// BaseOffset is the offset of the segment's first batch.
func (s *Segment) BaseOffset() int64 { return s.baseOffset }

func (s *Segment) logPath() string { return segmentPath(s.dir, s.baseOffset, LogFileSuffix) }

// indexFileSize is segment.index.bytes rounded down to whole entries.
func indexFileSize(maxIndexBytes int32, entrySize int) int64 {
	return int64(maxEntriesOf(maxIndexBytes, entrySize) * entrySize)
}

// createSegment creates the files of a new, empty segment. The index
// files are preallocated to segment.index.bytes, as Kafka does.
func createSegment(fsys FS, dir string, base int64, cfg Config, now time.Time) (*Segment, error) {
	s := &Segment{
		baseOffset: base, dir: dir, fsys: fsys, nextOffset: base,
		maxTs: -1, offsetOfMaxTs: base, firstBatchTs: -1, created: now,
		rollJitterMs: cfg.randomSegmentJitter(),
		offIdx:       newOffsetIndex(base, cfg.SegmentIndexBytes),
		timeIdx:      newTimeIndex(base, cfg.SegmentIndexBytes),
	}
	var err error
	if s.log, err = fsys.OpenFile(segmentPath(dir, base, LogFileSuffix), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644); err != nil {
		return nil, err
	}
	s.osf = s.log.OSFile()
	s.offIdx.path = segmentPath(dir, base, IndexFileSuffix)
	s.timeIdx.path = segmentPath(dir, base, TimeIndexFileSuffix)
	if err = s.preallocateIndexes(cfg.SegmentIndexBytes); err != nil {
		// No file of a segment that does not exist may stay: an empty
		// .log at this base offset would be taken at start-up for a
		// segment the appends that follow never went to.
		s.closeFiles()
		for _, p := range s.paths() {
			_ = fsys.Remove(p)
		}
		return nil, err
	}
	return s, nil
}

// preallocateIndexes empties the index files of the active segment and
// grows them to their maximum size (Kafka's resizeIndexes).
func (s *Segment) preallocateIndexes(maxIndexBytes int32) error {
	for _, idx := range []struct {
		path string
		size int
	}{{s.offIdx.path, OffsetIndexEntrySize}, {s.timeIdx.path, TimeIndexEntrySize}} {
		if err := withIndexFile(s.fsys, idx.path, func(f File) error {
			if err := f.Truncate(0); err != nil {
				return err
			}
			return f.Truncate(indexFileSize(maxIndexBytes, idx.size))
		}); err != nil {
			return err
		}
	}
	return nil
}

// withIndexFile opens an index file (creating it) for the duration of fn.
// Index files are not kept open: their entries live in memory and are
// written at flush, roll and close, so a segment holds one file descriptor
// (its .log), as a Kafka segment does with its memory-mapped indexes. That
// is what lets one broker host tens of thousands of partitions.
func withIndexFile(fsys FS, path string, fn func(File) error) error {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	return closeAfter(f, fn)
}

// withExistingIndexFile is withIndexFile for writes to an index that
// should exist: if the segment was deleted meanwhile (its files renamed
// .deleted by retention while a background flush ran), there is nothing to
// write and no file is created.
func withExistingIndexFile(fsys FS, path string, fn func(File) error) error {
	f, err := fsys.OpenFile(path, os.O_RDWR, 0o644)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return closeAfter(f, fn)
}

// closeAfter runs fn on f and closes f, returning the first error.
func closeAfter(f File, fn func(File) error) error {
	err := fn(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// openSegment opens an existing segment and loads its indexes. indexErr is
// non-nil if an index file was missing or corrupt: the caller must rebuild
// the indexes (recover) before using the segment.
//
// On an error it returns a nil segment and has closed what it opened (the
// cleanup closes the segment built here, never the nil result).
func openSegment(fsys FS, dir string, base int64, cfg Config, now time.Time) (_ *Segment, indexErr error, err error) {
	s := &Segment{
		baseOffset: base, dir: dir, fsys: fsys, nextOffset: base,
		maxTs: -1, offsetOfMaxTs: base, firstBatchTs: -1, created: now,
		rollJitterMs: cfg.randomSegmentJitter(),
		offIdx:       newOffsetIndex(base, cfg.SegmentIndexBytes),
		timeIdx:      newTimeIndex(base, cfg.SegmentIndexBytes),
	}
	defer func() {
		if err != nil {
			s.closeFiles()
		}
	}()
	if s.log, err = fsys.OpenFile(segmentPath(dir, base, LogFileSuffix), os.O_RDWR, 0o644); err != nil {
		return nil, nil, err
	}
	s.osf = s.log.OSFile()
	st, err := s.log.Stat()
	if err != nil {
		return nil, nil, err
	}
	s.size = st.Size()
	if s.size > math.MaxInt32 {
		return nil, nil, fmt.Errorf("%w: segment %s is %d bytes, over 2 GiB", kerr.KafkaStorageError, s.logPath(), s.size)
	}
	s.offIdx.path = segmentPath(dir, base, IndexFileSuffix)
	s.timeIdx.path = segmentPath(dir, base, TimeIndexFileSuffix)
	var b []byte
	var existed, existedT bool
	b, existed, err = readIndexFile(fsys, s.offIdx.path, OffsetIndexEntrySize)
	if err != nil {
		return nil, nil, err
	}
	s.offIdx.entries, indexErr = decodeOffsetIndex(b)
	b, existedT, err = readIndexFile(fsys, s.timeIdx.path, TimeIndexEntrySize)
	if err != nil {
		return nil, nil, err
	}
	if indexErr == nil {
		s.timeIdx.entries, indexErr = decodeTimeIndex(b)
	}
	if indexErr == nil && (!existed || !existedT) && s.size > 0 {
		// Kafka rebuilds a missing index.
		indexErr = errors.New("index file missing")
	}
	if indexErr == nil {
		indexErr = s.sanityCheck()
	}
	if terr := s.loadTxnIndex(); terr != nil {
		var ie *indexError
		if !errors.As(terr, &ie) {
			return nil, nil, terr
		}
		if indexErr == nil {
			indexErr = terr
		}
	}
	if indexErr != nil {
		s.offIdx.entries, s.timeIdx.entries = nil, nil
	}
	s.offIdx.written = len(s.offIdx.entries)
	s.timeIdx.written = len(s.timeIdx.entries)
	if n := len(s.timeIdx.entries); n > 0 {
		last := s.timeIdx.Entry(n - 1)
		s.maxTs, s.offsetOfMaxTs = last.Timestamp, last.Offset
	}
	return s, indexErr, nil
}

// readIndexFile reads an index file's entries up to the first all-zero
// entry (the preallocated tail), creating the file if it is missing;
// existed is false if it had to be created. The file is closed again.
func readIndexFile(fsys FS, path string, entrySize int) (b []byte, existed bool, err error) {
	existed, err = exists(fsys, path)
	if err != nil {
		return nil, false, err
	}
	err = withIndexFile(fsys, path, func(f File) error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		size := st.Size()
		if size == 0 {
			return nil
		}
		if size%int64(entrySize) != 0 {
			// Let decode report the corruption.
			b = make([]byte, size%int64(entrySize)+int64(entrySize))
			return nil
		}
		const chunk = 64 << 10 / 24 * 24
		for pos := int64(0); pos < size; {
			n := int64(chunk)
			if size-pos < n {
				n = size - pos
			}
			start := len(b)
			b = append(b, make([]byte, n)...)
			if _, err := f.ReadAt(b[start:], pos); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			pos += n
			if zeroEntryIn(b[start:], entrySize) {
				break
			}
		}
		return nil
	})
	return b, existed, err
}

func zeroEntryIn(b []byte, entrySize int) bool {
	for i := 0; i+entrySize <= len(b); i += entrySize {
		zero := true
		for _, c := range b[i : i+entrySize] {
			if c != 0 {
				zero = false
				break
			}
		}
		if zero {
			return true
		}
	}
	return false
}

// sanityCheck checks the indexes against the data (Kafka's
// LogSegment.sanityCheck): entries must point inside the .log file.
func (s *Segment) sanityCheck() error {
	if n := len(s.offIdx.entries); n > 0 {
		last := s.offIdx.entries[n-1]
		if int64(last.pos) >= s.size {
			return fmt.Errorf("offset index last entry position %d is past the data (%d bytes)", last.pos, s.size)
		}
	}
	if n := len(s.timeIdx.entries); n > 0 && len(s.offIdx.entries) > 0 {
		if s.timeIdx.entries[n-1].rel > s.offIdx.entries[len(s.offIdx.entries)-1].rel+math.MaxInt32/2 {
			return errors.New("time index offset beyond the offset index")
		}
	}
	if n := len(s.timeIdx.entries); n > 0 && s.size == 0 {
		return errors.New("time index has entries for an empty segment")
	}
	return nil
}

// readHeader reads the batch header at pos into buf (BatchHeaderSize bytes).
func (s *Segment) readHeader(pos int64, buf []byte) (BatchHeader, error) {
	n, err := s.log.ReadAt(buf[:BatchHeaderSize], pos)
	if n < BatchHeaderSize {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: short batch header at position %d of %s", kerr.CorruptMessage, pos, s.logPath())
		}
		return BatchHeader{}, err
	}
	return ParseBatchHeader(buf)
}

// findBatch scans batch headers from startPos up to end for the first
// batch whose last offset is >= offset.
func (s *Segment) findBatch(offset, startPos, end int64, buf []byte) (pos int64, h BatchHeader, found bool, err error) {
	for pos = startPos; pos < end; pos += int64(h.TotalSize()) {
		if h, err = s.readHeader(pos, buf); err != nil {
			return 0, h, false, err
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
	}
	return pos, h, false, nil
}

// indexBatch updates the in-memory indexes for a batch appended at pos
// (Kafka's LogSegment.append): an offset index entry (batch's last offset,
// position) once more than index.interval.bytes were appended since the
// previous one, and a time index entry with the largest timestamp so far
// at the same time if it grew.
func (s *Segment) indexBatch(lastOffset, maxTs, pos int64, size int, interval int32) {
	if maxTs > s.maxTs {
		s.maxTs, s.offsetOfMaxTs = maxTs, lastOffset
	}
	if s.firstBatchTs < 0 && pos == 0 {
		s.firstBatchTs = maxTs
	}
	if s.bytesSinceLastIndexEntry > int(interval) {
		if s.offIdx.Append(lastOffset, int32(pos)) == nil {
			_ = s.timeIdx.MaybeAppend(s.maxTs, s.offsetOfMaxTs, false)
		}
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += size
}

// recover rebuilds the segment's indexes from its data, checking each
// batch's header, CRC-32C and offsets (Kafka's LogSegment.recover). It
// truncates the file at the first torn or corrupt batch and returns the
// number of bytes dropped.
func (s *Segment) recover(interval int32) (int64, error) {
	st, err := s.log.Stat()
	if err != nil {
		return 0, err
	}
	fileSize := st.Size()
	s.offIdx.entries, s.offIdx.written = nil, 0
	s.timeIdx.entries, s.timeIdx.written = nil, 0
	s.maxTs, s.offsetOfMaxTs, s.firstBatchTs = -1, s.baseOffset, -1
	s.bytesSinceLastIndexEntry = 0
	next := s.baseOffset
	var pos int64
	buf := make([]byte, 64<<10)
	for fileSize-pos >= BatchHeaderSize {
		h, err := s.readHeader(pos, buf)
		if err != nil {
			if errors.Is(err, kerr.CorruptMessage) {
				break
			}
			return 0, err
		}
		total := int64(h.TotalSize())
		if pos+total > fileSize {
			break // torn write
		}
		if int64(len(buf)) < total {
			buf = make([]byte, total)
		}
		if _, err := s.log.ReadAt(buf[:total], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if _, err := CheckBatch(buf[:total]); err != nil {
			break
		}
		if h.BaseOffset < next || h.LastOffsetDelta < 0 || h.LastOffset()-s.baseOffset > math.MaxInt32 {
			break
		}
		s.indexBatch(h.LastOffset(), h.MaxTimestamp, pos, int(total), interval)
		pos += total
		next = h.NextOffset()
	}
	truncated := fileSize - pos
	if truncated > 0 {
		if err := s.log.Truncate(pos); err != nil {
			return 0, err
		}
	}
	s.size, s.nextOffset = pos, next
	// Rewrite the index files from scratch.
	for _, path := range []string{s.offIdx.path, s.timeIdx.path} {
		if err := withIndexFile(s.fsys, path, func(f File) error { return f.Truncate(0) }); err != nil {
			return 0, err
		}
	}
	return truncated, s.flushIndexes()
}

// loadTail finds the segment's next offset (and updates the max
// timestamp) by scanning batch headers after the last offset index entry.
// Used for a segment whose indexes were trusted.
func (s *Segment) loadTail() error {
	buf := make([]byte, BatchHeaderSize)
	pos := int64(0)
	s.nextOffset = s.baseOffset
	if n := len(s.offIdx.entries); n > 0 {
		e := s.offIdx.entries[n-1]
		pos = int64(e.pos)
	}
	first := true
	for pos < s.size {
		h, err := s.readHeader(pos, buf)
		if err != nil {
			return err
		}
		if pos == 0 {
			s.firstBatchTs = h.MaxTimestamp
		}
		if first && pos != 0 {
			// The indexed batch must end where the index says.
			if h.LastOffset() != s.offIdx.LastOffset() {
				return fmt.Errorf("%w: offset index entry %d points at a batch ending at %d", kerr.CorruptMessage, s.offIdx.LastOffset(), h.LastOffset())
			}
		}
		first = false
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.offsetOfMaxTs = h.MaxTimestamp, h.LastOffset()
		}
		s.nextOffset = h.NextOffset()
		pos += int64(h.TotalSize())
	}
	if pos != s.size {
		return fmt.Errorf("%w: last batch of %s ends at %d, past the file's %d bytes", kerr.CorruptMessage, s.logPath(), pos, s.size)
	}
	s.bytesSinceLastIndexEntry = 0
	if s.firstBatchTs < 0 && s.size > 0 {
		h, err := s.readHeader(0, buf)
		if err != nil {
			return err
		}
		s.firstBatchTs = h.MaxTimestamp
	}
	return nil
}

// flushIndexes writes index entries not yet in the files.
func (s *Segment) flushIndexes() error {
	if n := len(s.offIdx.entries); s.offIdx.written < n {
		b := s.offIdx.encode(nil, s.offIdx.written, n)
		if err := withExistingIndexFile(s.fsys, s.offIdx.path, func(f File) error {
			_, err := f.WriteAt(b, int64(s.offIdx.written*OffsetIndexEntrySize))
			return err
		}); err != nil {
			return err
		}
		s.offIdx.written = n
	}
	if n := len(s.timeIdx.entries); s.timeIdx.written < n {
		b := s.timeIdx.encode(nil, s.timeIdx.written, n)
		if err := withExistingIndexFile(s.fsys, s.timeIdx.path, func(f File) error {
			_, err := f.WriteAt(b, int64(s.timeIdx.written*TimeIndexEntrySize))
			return err
		}); err != nil {
			return err
		}
		s.timeIdx.written = n
	}
	return nil
}

// sync fsyncs the data and index files.
func (s *Segment) sync() error {
	if err := s.log.Sync(); err != nil {
		return err
	}
	for _, path := range []string{s.offIdx.path, s.timeIdx.path, s.txnIndexPath()} {
		if err := withExistingIndexFile(s.fsys, path, File.Sync); err != nil {
			return err
		}
	}
	return nil
}

// finalTimeIndexEntry adds the time index entry of a segment that stops
// being active (Kafka's onBecomeInactiveSegment). In memory only: callers
// hold Log.segMu.
func (s *Segment) finalTimeIndexEntry() {
	if s.maxTs >= 0 {
		_ = s.timeIdx.MaybeAppend(s.maxTs, s.offsetOfMaxTs, true)
	}
}

// trimIndexes writes pending index entries and trims the index files to
// their entries (Kafka's trimToValidSize).
func (s *Segment) trimIndexes() error {
	if err := s.flushIndexes(); err != nil {
		return err
	}
	if err := withExistingIndexFile(s.fsys, s.offIdx.path, func(f File) error {
		return f.Truncate(int64(len(s.offIdx.entries) * OffsetIndexEntrySize))
	}); err != nil {
		return err
	}
	return withExistingIndexFile(s.fsys, s.timeIdx.path, func(f File) error {
		return f.Truncate(int64(len(s.timeIdx.entries) * TimeIndexEntrySize))
	})
}

// largestTimestamp is what time retention compares: the max timestamp, or
// the file's modification time if no batch has one (Kafka).
func (s *Segment) largestTimestamp() int64 {
	if s.maxTs >= 0 {
		return s.maxTs
	}
	if st, err := s.log.Stat(); err == nil {
		return st.ModTime().UnixMilli()
	}
	return 0
}

func (s *Segment) files() []File { return []File{s.log} }

func (s *Segment) paths() []string {
	return []string{s.logPath(), s.offIdx.path, s.timeIdx.path, s.txnIndexPath()}
}

// closeFiles closes the segment's files.
func (s *Segment) closeFiles() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, f := range s.files() {
		if f != nil {
			if err := f.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// renameDeleted renames the segment's files with the .deleted suffix. The
// .log stays open: readers may still send from it until it is closed after
// file.delete.delay.ms. The paths are not changed, so a concurrent flush
// finds no index file and writes nothing.
func (s *Segment) renameDeleted() error {
	var errs []error
	for _, p := range s.paths() {
		if err := s.fsys.Rename(p, p+DeletedFileSuffix); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteFiles closes and removes the segment's (renamed) files.
func (s *Segment) deleteFiles() error {
	errs := []error{s.closeFiles()}
	for _, p := range s.paths() {
		p += DeletedFileSuffix
		if err := s.fsys.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// recordTimestampsLimit bounds decompression when searching a batch by
// timestamp.
const recordTimestampsLimit = 256 << 20

// decodeRecordTimestamps walks the records of a batch (decompressing it if
// needed), calling fn with each record's offset and timestamp until fn
// returns false. It reports false if the batch cannot be decoded.
func decodeRecordTimestamps(batch []byte, fn func(offset, ts int64) bool) bool {
	h, err := ParseBatchHeader(batch)
	if err != nil || len(batch) < h.TotalSize() {
		return false
	}
	recs := batch[BatchHeaderSize:h.TotalSize()]
	if h.Codec() != CodecNone {
		if recs, err = Decompress(nil, h.Codec(), recs, recordTimestampsLimit); err != nil {
			return false
		}
	}
	it := NewRecordIter(recs)
	var r Record
	for {
		ok, err := it.Next(&r)
		if err != nil {
			return false
		}
		if !ok {
			return true
		}
		ts := h.BaseTimestamp + r.TimestampDelta
		if h.LogAppendTime() {
			ts = h.MaxTimestamp
		}
		if !fn(h.BaseOffset+int64(r.OffsetDelta), ts) {
			return true
		}
	}
}
