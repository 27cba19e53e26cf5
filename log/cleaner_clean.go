package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// cleanerStats are the statistics of one cleaning (Kafka's CleanerStats).
type cleanerStats struct {
	start, mapDone, end time.Time
	bytesRead           int64 // bytes of batches read while copying
	bytesWritten        int64
	mapBytesRead        int64
	mapMessagesRead     int64
	messagesRead        int64
	messagesWritten     int64
	invalidMessagesRead int64 // records without a key
	bufferUtilization   float64
}

func (s *cleanerStats) elapsed() time.Duration { return s.end.Sub(s.start) }

// logToClean is a log chosen for cleaning and its range (Kafka's
// LogToClean): [firstDirtyOffset, firstUncleanableOffset) is cleaned,
// firstUncleanableOffset being the base of a segment.
type logToClean struct {
	log                    *Log
	firstDirtyOffset       int64
	firstUncleanableOffset int64
	cleanBytes             int64 // bytes of the segments below the first dirty offset
	cleanableBytes         int64
	needCompactionNow      bool // max.compaction.lag.ms is overdue
}

func (c *logToClean) totalBytes() int64 { return c.cleanBytes + c.cleanableBytes }

func (c *logToClean) cleanableRatio() float64 {
	if c.totalBytes() == 0 {
		return 0
	}
	return float64(c.cleanableBytes) / float64(c.totalBytes())
}

// errCleaningAborted stops a cleaning: the partition's cleaning was
// aborted (deleted, paused, its policy no longer compact) or the cleaner
// is shutting down. Nothing is checkpointed; nothing is marked
// uncleanable.
var errCleaningAborted = errors.New("log cleaning aborted")

// cleaner cleans one log at a time (Kafka's Cleaner); each cleaner thread
// has one, with its own offset map and I/O buffers.
type cleaner struct {
	id              int
	offsetMap       *skimpyOffsetMap
	ioBufferSize    int // each of the read and write buffers
	maxIOBufferSize int // message.max.bytes: the buffers grow up to it
	loadFactor      float64
	throttler       *throttler
	now             func() time.Time
	logger          *slog.Logger
	// checkDone returns errCleaningAborted once cleaning l must stop.
	checkDone   func(l *Log) error
	abortedTxns abortedTxnsFunc
	// writeTxnIndex writes the aborted transactions a cleaned segment
	// keeps (those whose ABORT marker it keeps) as its .txnindex.cleaned,
	// Kafka's cleanedIndex. See writeCleanedTxnIndex.
	writeTxnIndex func(dest *Segment, txns []AbortedTxn) error
	done          <-chan struct{} // cuts throttling sleeps short at shutdown

	readBuf  []byte
	writeBuf []byte
	decBuf   []byte
	retained []Record
	pending  []pendingBatch // batches in writeBuf, for the indexes
	builder  BatchBuilder
}

type pendingBatch struct {
	pos, size  int
	lastOffset int64
	maxTs      int64
}

// cleanCtx is what deciding the fate of one batch needs.
type cleanCtx struct {
	now               int64 // ms
	deleteRetentionMs int64
	txn               *cleanedTransactionMetadata
	producers         map[int64]lastRecord
	upperBound        int64 // first uncleanable offset of this round
	cfg               Config
	stats             *cleanerStats
}

func newCleaner(id int, mapMemory int64, ioBufferSize, maxIOBufferSize int, loadFactor float64, t *throttler, now func() time.Time, logger *slog.Logger) *cleaner {
	c := &cleaner{
		id: id, offsetMap: newSkimpyOffsetMap(mapMemory), ioBufferSize: max(ioBufferSize, BatchHeaderSize),
		maxIOBufferSize: maxIOBufferSize, loadFactor: loadFactor, throttler: t, now: now, logger: logger,
		checkDone:     func(*Log) error { return nil },
		abortedTxns:   (*Log).AbortedTransactions,
		writeTxnIndex: writeCleanedTxnIndex,
	}
	c.builder.Reset(0)
	c.restoreBuffers()
	return c
}

// clean cleans the log's range and returns the first offset not cleaned
// (the next first dirty offset) and the statistics (Kafka's doClean).
func (c *cleaner) clean(ltc *logToClean) (int64, cleanerStats, error) {
	l := ltc.log
	stats := cleanerStats{start: time.Now()}
	v := l.cleanerView()
	now := c.now().UnixMilli()
	upper := ltc.firstUncleanableOffset
	c.logger.Info("cleaning log", "cleaner", c.id, "partition", l.tp.String(), "first_dirty_offset", ltc.firstDirtyOffset, "first_uncleanable_offset", upper)
	if err := c.buildOffsetMap(l, &v, ltc.firstDirtyOffset, upper, &stats); err != nil {
		return 0, stats, err
	}
	endOffset := c.offsetMap.latestOffset() + 1
	stats.mapDone = time.Now()

	ctx := &cleanCtx{
		now: now, deleteRetentionMs: v.cfg.DeleteRetentionMs, txn: newCleanedTransactionMetadata(),
		producers: l.lastRecordsOfActiveProducers(), upperBound: upper, cfg: v.cfg, stats: &stats,
	}
	var segs []segView
	for _, s := range v.segs[:len(v.segs)-1] { // never the active segment
		if s.base >= endOffset {
			break
		}
		segs = append(segs, s)
	}
	for _, group := range groupSegmentsBySize(segs, v.cfg.SegmentBytes, v.cfg.SegmentIndexBytes, upper) {
		if err := c.cleanSegments(l, &v, group, ctx); err != nil {
			return 0, stats, err
		}
	}
	stats.bufferUtilization = c.offsetMap.utilization()
	stats.end = time.Now()
	return endOffset, stats, nil
}

// groupSegmentsBySize groups consecutive segments whose data, offset index
// and time index each fit maxSize / maxIndexSize together, and whose
// offsets fit one segment's 32-bit relative offsets: each group becomes one
// cleaned segment, so that segments do not shrink forever (Kafka's
// groupSegmentsBySize).
func groupSegmentsBySize(segs []segView, maxSize, maxIndexSize int32, firstUncleanable int64) [][]segView {
	var groups [][]segView
	for len(segs) > 0 {
		g := []segView{segs[0]}
		logSize, idx, tidx := segs[0].size, segs[0].offIdxBytes, segs[0].timeIdxBytes
		segs = segs[1:]
		for len(segs) > 0 &&
			logSize+segs[0].size <= int64(maxSize) &&
			idx+segs[0].offIdxBytes <= int64(maxIndexSize) &&
			tidx+segs[0].timeIdxBytes <= int64(maxIndexSize) &&
			(segs[0].size == 0 || lastOffsetForFirstSegment(segs, firstUncleanable)-g[0].base <= math.MaxInt32) {
			g = append(g, segs[0])
			logSize += segs[0].size
			idx += segs[0].offIdxBytes
			tidx += segs[0].timeIdxBytes
			segs = segs[1:]
		}
		groups = append(groups, g)
	}
	return groups
}

// lastOffsetForFirstSegment bounds the last offset of segs[0] by the next
// segment's base (or the first uncleanable offset).
func lastOffsetForFirstSegment(segs []segView, firstUncleanable int64) int64 {
	if len(segs) > 1 {
		return segs[1].base - 1
	}
	return firstUncleanable - 1
}

// buildOffsetMap fills the offset map with the last offset of each key in
// [start, end), as far as the map holds (Kafka's buildOffsetMap). The map
// is sized for the offsets of the range, within the thread's budget.
func (c *cleaner) buildOffsetMap(l *Log, v *logView, start, end int64, stats *cleanerStats) error {
	need := float64(max(end-start, 0))/c.loadFactor + 2
	c.offsetMap.reset(int(min(need, float64(c.offsetMap.maxSlots))))
	var dirty []segView
	for _, s := range v.overlapping(start, end) {
		if s.seg != v.segs[len(v.segs)-1].seg {
			dirty = append(dirty, s)
		}
	}
	if len(dirty) == 0 {
		return nil
	}
	txn := newCleanedTransactionMetadata()
	aborted, err := c.abortedTxns(l, start, end)
	if err != nil {
		return err
	}
	txn.addAbortedTransactions(aborted)
	for i, s := range dirty {
		next := end
		if i+1 < len(dirty) {
			next = dirty[i+1].base
		}
		full, err := c.buildOffsetMapForSegment(l, s, start, next, txn, v.cfg, stats)
		if err != nil {
			return err
		}
		if full {
			c.logger.Debug("offset map is full", "partition", l.tp.String(), "segments_mapped", i, "partially_mapped_base_offset", s.base)
			break
		}
	}
	return nil
}

// buildOffsetMapForSegment adds the keys of one segment from offset start
// on and reports whether the map filled up (Kafka's
// buildOffsetMapForSegment). Records of aborted transactions are skipped.
func (c *cleaner) buildOffsetMapForSegment(l *Log, s segView, start, nextSegmentStart int64, txn *cleanedTransactionMetadata, cfg Config, stats *cleanerStats) (bool, error) {
	if err := c.checkCompact(l); err != nil {
		return false, err
	}
	l.segMu.RLock()
	pos := int64(s.seg.offIdx.Lookup(start).Position)
	l.segMu.RUnlock()
	maxDesired := int(float64(c.offsetMap.slots) * c.loadFactor)
	defer c.restoreBuffers()
	var r Record
	for pos < s.size {
		chunk, err := c.readChunk(l, s, pos)
		if err != nil {
			return false, err
		}
		consumed := 0
		for len(chunk)-consumed >= BatchHeaderSize {
			h, err := ParseBatchHeader(chunk[consumed:])
			if err != nil {
				return false, corruptSegment(s, pos+int64(consumed), err)
			}
			total := h.TotalSize()
			if total > len(chunk)-consumed {
				break
			}
			batch := chunk[consumed : consumed+total]
			switch {
			case h.IsControl():
				typ, hasRecord, err := c.controlType(batch, h, cfg)
				if err != nil {
					return false, corruptSegment(s, pos+int64(consumed), err)
				}
				txn.onControlBatchRead(&h, typ, hasRecord)
				stats.mapMessagesRead++
			case txn.onBatchRead(&h):
				stats.mapMessagesRead += int64(h.NumRecords) // aborted: not mapped
			default:
				recs, err := c.batchRecords(batch, h, cfg)
				if err != nil {
					return false, corruptSegment(s, pos+int64(consumed), err)
				}
				it := NewRecordIter(recs)
				for {
					ok, err := it.Next(&r)
					if err != nil {
						return false, corruptSegment(s, pos+int64(consumed), err)
					}
					if !ok {
						break
					}
					if off := h.BaseOffset + int64(r.OffsetDelta); r.Key != nil && off >= start {
						if c.offsetMap.size() >= maxDesired {
							return true, nil
						}
						if err := c.offsetMap.put(r.Key, off); err != nil {
							return false, err
						}
					}
					stats.mapMessagesRead++
				}
			}
			if h.LastOffset() >= start {
				c.offsetMap.updateLatestOffset(h.LastOffset())
			}
			consumed += total
		}
		if consumed == 0 {
			if err := c.growReadBuffer(s, pos, chunk, cfg); err != nil {
				return false, err
			}
			continue
		}
		pos += int64(consumed)
		stats.mapBytesRead += int64(consumed)
	}
	// Past offset gaps at the end of the segment.
	c.offsetMap.updateLatestOffset(nextSegmentStart - 1)
	return false, nil
}

// cleanSegments cleans a group of segments into one new segment and swaps
// it in (Kafka's cleanSegments).
func (c *cleaner) cleanSegments(l *Log, v *logView, group []segView, ctx *cleanCtx) error {
	dest, err := createCleanedSegment(l.fsys, v.dir, group[0].base, v.cfg, c.now())
	if err != nil {
		return fmt.Errorf("%w: creating cleaned segment %d of %s: %w", kerr.KafkaStorageError, group[0].base, l.tp, err)
	}
	ctx.txn.retained = nil // the aborted transactions this segment keeps
	lastNonEmpty := -1
	for i, s := range group {
		if s.size > 0 {
			lastNonEmpty = i
		}
	}
	for i, s := range group {
		upper := v.leo
		if j := v.floor(s.base); j+1 < len(v.segs) {
			upper = v.segs[j+1].base
		}
		aborted, err := c.abortedTxns(l, s.base, upper)
		if err == nil {
			ctx.txn.addAbortedTransactions(aborted)
			err = c.cleanInto(l, s, dest, ctx, i == lastNonEmpty)
		}
		if err != nil {
			if derr := dest.deleteCleaned(); derr != nil {
				c.logger.Warn("removing cleaned segment failed", "partition", l.tp.String(), "err", derr)
			}
			return err
		}
	}
	err = c.writeTxnIndex(dest, ctx.txn.retained)
	if err == nil {
		err = dest.finishCleaned()
	}
	if err != nil {
		dest.deleteCleaned()
		return fmt.Errorf("%w: flushing cleaned segment %d of %s: %w", kerr.KafkaStorageError, dest.baseOffset, l.tp, err)
	}
	c.logger.Debug("swapping in cleaned segment", "partition", l.tp.String(), "base_offset", dest.baseOffset, "replaces", len(group), "bytes", dest.size)
	return l.replaceSegments(dest, group)
}

// cleanInto copies the records of segment s to retain into dest (Kafka's
// cleanInto), a read buffer at a time. lastOfGroup: s holds the last batch
// of the group, which is kept even if empty.
func (c *cleaner) cleanInto(l *Log, s segView, dest *Segment, ctx *cleanCtx, lastOfGroup bool) error {
	if err := c.checkCompact(l); err != nil {
		return err
	}
	defer c.restoreBuffers()
	for pos := int64(0); pos < s.size; {
		chunk, err := c.readChunk(l, s, pos)
		if err != nil {
			return err
		}
		consumed := 0
		for len(chunk)-consumed >= BatchHeaderSize {
			h, err := ParseBatchHeader(chunk[consumed:])
			if err != nil {
				return corruptSegment(s, pos+int64(consumed), err)
			}
			total := h.TotalSize()
			if total > len(chunk)-consumed {
				break
			}
			last := lastOfGroup && pos+int64(consumed+total) == s.size
			if err := c.filterBatch(chunk[consumed:consumed+total], h, ctx, last); err != nil {
				return corruptSegment(s, pos+int64(consumed), err)
			}
			consumed += total
		}
		if consumed == 0 {
			if err := c.growReadBuffer(s, pos, chunk, ctx.cfg); err != nil {
				return err
			}
			continue
		}
		pos += int64(consumed)
		ctx.stats.bytesRead += int64(consumed)
		if err := c.flushWrites(l, dest, ctx); err != nil {
			return err
		}
	}
	return nil
}

// batchRetention is Kafka's RecordFilter.BatchRetention.
type batchRetention int

const (
	deleteEmpty batchRetention = iota // keep the batch if a record is kept
	retainEmpty                       // keep the batch even if no record is
	deleteBatch                       // drop the batch
)

// filterBatch decides the fate of one batch and of each of its records,
// and appends what is kept to the write buffer (Kafka's
// MemoryRecords.filterTo with the cleaner's RecordFilter): a batch whose
// records are all kept and needs no delete horizon is copied as it is;
// one that lost records is rebuilt with the same base offset, producer id,
// epoch, base sequence and last offset (so producer state survives), a
// tombstone's or marker's batch gets its delete horizon (KIP-534) the first
// time it is cleaned.
func (c *cleaner) filterBatch(batch []byte, h BatchHeader, ctx *cleanCtx, lastOfGroup bool) error {
	if _, err := CheckBatch(batch); err != nil {
		return err
	}
	recs, err := c.batchRecords(batch, h, ctx.cfg)
	if err != nil {
		return err
	}
	control := h.IsControl()
	var canDiscard bool
	if control {
		typ, hasRecord, err := c.controlType(batch, h, ctx.cfg)
		if err != nil {
			return err
		}
		canDiscard = ctx.txn.onControlBatchRead(&h, typ, hasRecord)
	} else {
		canDiscard = ctx.txn.onBatchRead(&h)
	}
	hasHorizon := h.Attributes&AttrDeleteHorizon != 0
	discardRecords := canDiscard
	if control {
		// A marker goes once its transaction's batches are gone and its
		// delete horizon has passed, like a tombstone.
		discardRecords = canDiscard && hasHorizon && h.BaseTimestamp <= ctx.now
	}
	var retention batchRetention
	switch {
	case h.ProducerID >= 0 && ctx.isLastOfProducer(&h):
		retention = retainEmpty
	case h.NextOffset() == ctx.upperBound || lastOfGroup:
		retention = retainEmpty
	case discardRecords:
		retention = deleteBatch
	default:
		retention = deleteEmpty
	}
	if retention == deleteBatch {
		return nil
	}

	c.retained = c.retained[:0]
	writeOriginal, tombstones := true, false
	var r Record
	n, prevDelta := 0, int32(-1)
	it := NewRecordIter(recs)
	for {
		ok, err := it.Next(&r)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if r.OffsetDelta <= prevDelta || r.OffsetDelta > h.LastOffsetDelta {
			return fmt.Errorf("%w: record offset delta %d after %d (last %d)", kerr.CorruptMessage, r.OffsetDelta, prevDelta, h.LastOffsetDelta)
		}
		prevDelta = r.OffsetDelta
		n++
		keep := !discardRecords && (control || c.shouldRetainRecord(&h, &r, ctx))
		if keep {
			c.retained = append(c.retained, r)
			tombstones = tombstones || r.Value == nil
		} else {
			writeOriginal = false
		}
	}
	if n != int(h.NumRecords) {
		return fmt.Errorf("%w: batch claims %d records, holds %d", kerr.CorruptMessage, h.NumRecords, n)
	}
	ctx.stats.messagesRead += int64(n)
	switch {
	case len(c.retained) > 0:
		ctx.stats.messagesWritten += int64(len(c.retained))
		needHorizon := (tombstones || (canDiscard && control)) && !hasHorizon
		if writeOriginal && !needHorizon {
			c.emit(batch, h.LastOffset(), h.MaxTimestamp)
			return nil
		}
		horizon := int64(-1)
		switch {
		case needHorizon:
			horizon = ctx.now + min(ctx.deleteRetentionMs, math.MaxInt64-ctx.now)
		case hasHorizon:
			horizon = h.BaseTimestamp
		}
		return c.rebuild(h, horizon)
	case retention == retainEmpty:
		b := &c.builder
		c.resetBuilder(h)
		b.Codec = CodecNone
		b.SetLastOffsetDelta(h.LastOffsetDelta)
		b.SetMaxTimestamp(h.MaxTimestamp)
		return c.build(h)
	}
	return nil
}

// rebuild writes a batch holding the retained records of h's batch.
func (c *cleaner) rebuild(h BatchHeader, horizon int64) error {
	b := &c.builder
	c.resetBuilder(h)
	b.DeleteHorizonMs = horizon
	for i := range c.retained {
		b.AddRecord(h.BaseTimestamp, &c.retained[i])
	}
	// The batch keeps its last offset, so the producer's last sequence
	// stays what it was (Kafka's overrideLastOffset).
	b.SetLastOffsetDelta(h.LastOffsetDelta)
	if h.LogAppendTime() {
		b.SetMaxTimestamp(h.MaxTimestamp)
	}
	return c.build(h)
}

func (c *cleaner) resetBuilder(h BatchHeader) {
	b := &c.builder
	b.Reset(h.BaseOffset)
	b.PartitionLeaderEpoch = h.PartitionLeaderEpoch
	b.ProducerID, b.ProducerEpoch, b.BaseSequence = h.ProducerID, h.ProducerEpoch, h.BaseSequence
	b.Transactional, b.Control, b.LogAppendTime = h.IsTransactional(), h.IsControl(), h.LogAppendTime()
	b.Codec = h.Codec()
}

// build appends the builder's batch to the write buffer.
func (c *cleaner) build(h BatchHeader) error {
	start := len(c.writeBuf)
	out, err := c.builder.Build(c.writeBuf)
	if err != nil {
		return err
	}
	c.writeBuf = out
	nh, err := ParseBatchHeader(out[start:])
	if err != nil {
		return err
	}
	c.pending = append(c.pending, pendingBatch{pos: start, size: len(out) - start, lastOffset: nh.LastOffset(), maxTs: nh.MaxTimestamp})
	return nil
}

// emit appends a batch kept as it is to the write buffer.
func (c *cleaner) emit(batch []byte, lastOffset, maxTs int64) {
	c.pending = append(c.pending, pendingBatch{pos: len(c.writeBuf), size: len(batch), lastOffset: lastOffset, maxTs: maxTs})
	c.writeBuf = append(c.writeBuf, batch...)
}

// isLastOfProducer reports whether the batch holds what the producer state
// of an active producer needs: its last data batch, or its last marker if
// that is its last entry (Kafka's isBatchLastRecordOfProducer).
func (ctx *cleanCtx) isLastOfProducer(h *BatchHeader) bool {
	lr, ok := ctx.producers[h.ProducerID]
	if !ok {
		return false
	}
	if lr.lastDataOffset >= 0 {
		return h.LastOffset() == lr.lastDataOffset
	}
	return h.IsControl() && h.ProducerEpoch == lr.producerEpoch
}

// shouldRetainRecord keeps a record if the map does not cover it, or if it
// is the latest of its key and has a value or is a tombstone whose delete
// horizon has not passed (Kafka's shouldRetainRecord). A record without a
// key cannot be in a compacted log (the validator refuses it); one found
// is dropped and counted, as Kafka does.
func (c *cleaner) shouldRetainRecord(h *BatchHeader, r *Record, ctx *cleanCtx) bool {
	off := h.BaseOffset + int64(r.OffsetDelta)
	if off > c.offsetMap.latestOffset() {
		return true
	}
	if r.Key == nil {
		ctx.stats.invalidMessagesRead++
		return false
	}
	if off < c.offsetMap.get(r.Key) {
		return false
	}
	if r.Value != nil {
		return true
	}
	return h.Attributes&AttrDeleteHorizon == 0 || ctx.now < h.BaseTimestamp
}

// controlType reads the type of a control batch's record.
func (c *cleaner) controlType(batch []byte, h BatchHeader, cfg Config) (int16, bool, error) {
	recs, err := c.batchRecords(batch, h, cfg)
	if err != nil {
		return 0, false, err
	}
	it := NewRecordIter(recs)
	var r Record
	ok, err := it.Next(&r)
	if err != nil || !ok {
		return 0, false, err
	}
	typ, ok := controlRecordType(r.Key)
	if !ok {
		return 0, false, fmt.Errorf("%w: control record key of %d bytes", kerr.CorruptMessage, len(r.Key))
	}
	return typ, true, nil
}

// batchRecords returns the records section of a batch, decompressed into
// the cleaner's buffer if needed.
func (c *cleaner) batchRecords(batch []byte, h BatchHeader, cfg Config) ([]byte, error) {
	recs := batch[BatchHeaderSize:]
	if h.Codec() == CodecNone {
		return recs, nil
	}
	var err error
	c.decBuf, err = Decompress(c.decBuf[:0], h.Codec(), recs, maxDecompressedSize(cfg))
	return c.decBuf, err
}

// flushWrites writes the write buffer to the cleaned segment and indexes
// its batches.
func (c *cleaner) flushWrites(l *Log, dest *Segment, ctx *cleanCtx) error {
	if len(c.writeBuf) == 0 {
		return nil
	}
	if dest.size+int64(len(c.writeBuf)) > math.MaxInt32 {
		return fmt.Errorf("%w: cleaned segment %d of %s would pass 2 GiB", kerr.KafkaStorageError, dest.baseOffset, l.tp)
	}
	if _, err := dest.log.WriteAt(c.writeBuf, dest.size); err != nil {
		return fmt.Errorf("%w: writing cleaned segment %d of %s: %w", kerr.KafkaStorageError, dest.baseOffset, l.tp, err)
	}
	for _, p := range c.pending {
		dest.indexBatch(p.lastOffset, p.maxTs, dest.size+int64(p.pos), p.size, ctx.cfg.IndexIntervalBytes)
		dest.nextOffset = p.lastOffset + 1
	}
	dest.size += int64(len(c.writeBuf))
	ctx.stats.bytesWritten += int64(len(c.writeBuf))
	c.throttler.maybeThrottle(len(c.writeBuf), c.done)
	c.writeBuf, c.pending = c.writeBuf[:0], c.pending[:0]
	return nil
}

// readChunk reads up to a read buffer of segment s from pos, after
// checking that cleaning may go on.
func (c *cleaner) readChunk(l *Log, s segView, pos int64) ([]byte, error) {
	if err := c.checkDone(l); err != nil {
		return nil, err
	}
	n := int(min(int64(len(c.readBuf)), s.size-pos))
	m, err := s.seg.log.ReadAt(c.readBuf[:n], pos)
	if m < n {
		l.segMu.RLock()
		size := s.seg.size
		l.segMu.RUnlock()
		switch {
		case errors.Is(err, os.ErrClosed) || size != s.size:
			return nil, errLogChanged // deleted or truncated meanwhile
		case err == nil || errors.Is(err, io.EOF):
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: reading segment %d of %s at %d: %w", kerr.KafkaStorageError, s.base, l.tp, pos, err)
	}
	c.throttler.maybeThrottle(n, c.done)
	return c.readBuf[:n], nil
}

// checkCompact stops cleaning a log whose cleanup.policy no longer has
// compact (switched at run time) or that was closed or deleted.
func (c *cleaner) checkCompact(l *Log) error {
	if err := c.checkDone(l); err != nil {
		return err
	}
	l.mu.Lock()
	compact, usable := l.cfg.Compact(), l.usable()
	l.mu.Unlock()
	if usable != nil {
		return errLogChanged
	}
	if !compact {
		return errCleaningAborted
	}
	return nil
}

// growReadBuffer grows the read buffer when not even one batch fits (Kafka's
// growBuffersOrFail): doubled up to max(message.max.bytes, max.message.bytes),
// and beyond to the size of the batch if that is larger (a batch may pass
// the limit after compaction or a lowered limit).
func (c *cleaner) growReadBuffer(s segView, pos int64, chunk []byte, cfg Config) error {
	left := s.size - pos
	if len(chunk) < BatchHeaderSize {
		return corruptSegment(s, pos, fmt.Errorf("%w: %d trailing bytes", kerr.CorruptMessage, left))
	}
	h, err := ParseBatchHeader(chunk)
	if err != nil {
		return corruptSegment(s, pos, err)
	}
	need := int64(h.TotalSize())
	if need > left {
		return corruptSegment(s, pos, fmt.Errorf("%w: batch of %d bytes, %d left in the segment", kerr.CorruptMessage, need, left))
	}
	limit := max(c.maxIOBufferSize, int(cfg.MaxMessageBytes))
	size := max(min(2*len(c.readBuf), limit), int(need))
	c.readBuf = make([]byte, size)
	return nil
}

// restoreBuffers shrinks buffers grown for a large batch back to their
// configured size.
func (c *cleaner) restoreBuffers() {
	if len(c.readBuf) != c.ioBufferSize {
		c.readBuf = make([]byte, c.ioBufferSize)
	}
	if cap(c.writeBuf) > 2*c.ioBufferSize || c.writeBuf == nil {
		c.writeBuf = make([]byte, 0, c.ioBufferSize)
	}
	if cap(c.decBuf) > 2*c.ioBufferSize {
		c.decBuf = nil
	}
}

func corruptSegment(s segView, pos int64, err error) error {
	if errors.Is(err, errLogChanged) || errors.Is(err, errCleaningAborted) {
		return err
	}
	return fmt.Errorf("segment %d at position %d: %w", s.base, pos, err)
}
