package log

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Transactions on the log (Kafka's UnifiedLog and LocalLog): control
// batches, the last stable offset, the transaction index, and rebuilding
// the producer state at load and after truncation.

// producerBatchesOf describes the validated batches for the producer
// state. A control batch's marker is decoded; one that is not a COMMIT or
// ABORT marker is INVALID_RECORD (from a coordinator) or ignored (read
// back from the log).
func producerBatchesOf(res *ValidationResult, origin AppendOrigin) ([]producerBatch, error) {
	out := make([]producerBatch, 0, len(res.Batches))
	for i := range res.Batches {
		b := &res.Batches[i]
		pb := producerBatch{
			pid: b.ProducerID, epoch: b.ProducerEpoch, firstSeq: b.BaseSequence, lastSeq: b.LastSequence,
			firstOffset: b.BaseOffset, lastOffset: b.LastOffset, maxTimestamp: b.MaxTimestamp,
			transactional: b.Transactional, control: b.Control,
		}
		if b.Control && b.ProducerID >= 0 {
			mk, err := parseEndTxnMarker(res.Records[b.Pos : b.Pos+b.Size])
			if err != nil && origin != AppendOriginReplication {
				return nil, err
			}
			pb.marker = mk
		}
		out = append(out, pb)
	}
	return out, nil
}

// parseEndTxnMarker decodes the first record of a control batch as a
// transaction marker (Kafka's EndTransactionMarker.deserialize): key
// version int16 and type int16 (0 ABORT, 1 COMMIT), value version int16
// and coordinator epoch int32. A batch without records gives nil.
func parseEndTxnMarker(batch []byte) (*endTxnMarker, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return nil, err
	}
	if h.NumRecords == 0 || len(batch) < h.TotalSize() {
		return nil, nil
	}
	recs := batch[BatchHeaderSize:h.TotalSize()]
	if h.Codec() != CodecNone {
		if recs, err = Decompress(nil, h.Codec(), recs, 1<<20); err != nil {
			return nil, fmt.Errorf("%w: control batch: %v", kerr.CorruptMessage, err)
		}
	}
	var r Record
	it := NewRecordIter(recs)
	ok, err := it.Next(&r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	if len(r.Key) < 4 || int16(binary.BigEndian.Uint16(r.Key)) < 0 {
		return nil, fmt.Errorf("%w: invalid control record key", kerr.InvalidRecord)
	}
	typ := int16(binary.BigEndian.Uint16(r.Key[2:]))
	if typ != ControlAbort && typ != ControlCommit {
		return nil, fmt.Errorf("%w: control record type %d is not an end transaction marker", kerr.InvalidRecord, typ)
	}
	if len(r.Value) < 6 || int16(binary.BigEndian.Uint16(r.Value)) < 0 {
		return nil, fmt.Errorf("%w: invalid end transaction marker value", kerr.InvalidRecord)
	}
	ts := h.BaseTimestamp + r.TimestampDelta
	if h.LogAppendTime() {
		ts = h.MaxTimestamp
	}
	return &endTxnMarker{typ: typ, coordinatorEpoch: int32(binary.BigEndian.Uint32(r.Value[2:])), timestamp: ts}, nil
}

// commitProducerState applies the last prepare after its batches were
// written to seg: Kafka's append after localLog.append. l.mu held.
func (l *Log) commitProducerState(seg *Segment) error {
	return l.completeTxns(seg, l.pstate.commit(), true)
}

// completeTxns applies the transaction events of a commit in batch
// order: a start opens a transaction; a completion of an aborted one is
// recorded in seg's transaction index (if writeIndex) with the last
// stable offset it leaves, then closes it. The last stable offset is
// published after. A failed index write makes the log unusable (as Kafka
// takes the log dir offline); recovery rebuilds the index. l.mu held.
func (l *Log) completeTxns(seg *Segment, events []txnEvent, writeIndex bool) error {
	var err error
	var done []completedTxn
	for _, ev := range events {
		c := ev.completed
		if c == nil {
			l.pstate.addOngoing(ev.start)
			continue
		}
		if c.aborted && writeIndex && err == nil {
			t := AbortedTxn{ProducerID: c.pid, FirstOffset: c.firstOffset, LastOffset: c.lastOffset, LastStableOffset: l.pstate.lastStableOffsetFor(*c)}
			if werr := seg.writeTxnIndexEntry(t); werr != nil {
				l.failed = werr
				err = fmt.Errorf("%w: writing the transaction index of %s: %w", kerr.KafkaStorageError, l.tp, werr)
			} else {
				l.segMu.Lock()
				seg.txnIdx = append(seg.txnIdx, t)
				l.segMu.Unlock()
			}
		}
		l.pstate.completeTxn(*c)
		done = append(done, *c)
	}
	l.segMu.Lock()
	l.firstUndecided = l.pstate.firstUndecidedOffset()
	for _, c := range done {
		if c.lastOffset >= l.hw {
			i := sort.Search(len(l.unreplicated), func(i int) bool { return l.unreplicated[i].firstOffset > c.firstOffset })
			l.unreplicated = slices.Insert(l.unreplicated, i, c)
		}
	}
	l.segMu.Unlock()
	l.pstate.events = l.pstate.events[:0]
	return err
}

// pruneUnreplicatedLocked forgets completed transactions whose marker is
// below offset (Kafka's removeUnreplicatedTransactions). segMu held.
func (l *Log) pruneUnreplicatedLocked(offset int64) {
	n := 0
	for _, c := range l.unreplicated {
		if c.lastOffset >= offset {
			l.unreplicated[n] = c
			n++
		}
	}
	l.unreplicated = l.unreplicated[:n]
}

// firstUnstableLocked is the first offset that is not yet stable (Kafka's
// firstUnstableOffset, at least the log start), or -1. segMu held.
func (l *Log) firstUnstableLocked() int64 {
	fu := l.firstUndecided
	if len(l.unreplicated) > 0 && (fu < 0 || l.unreplicated[0].firstOffset < fu) {
		fu = l.unreplicated[0].firstOffset
	}
	if fu >= 0 && fu < l.logStart {
		fu = l.logStart
	}
	return fu
}

// lastStableOffsetLocked is Kafka's lastStableOffset. segMu held.
func (l *Log) lastStableOffsetLocked() int64 {
	if fu := l.firstUnstableLocked(); fu >= 0 && fu < l.hw {
		return fu
	}
	return l.hw
}

// LastStableOffset is the last stable offset (LSO): every offset below it
// is decided (not part of an open transaction, or of one whose marker is
// not yet below the high watermark). It is the first offset of the
// earliest such transaction, or the high watermark if there is none.
// read_committed consumers read up to it.
func (l *Log) LastStableOffset() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.lastStableOffsetLocked()
}

// LastStableOffsetLag is the high watermark minus the last stable offset
// (Kafka's lastStableOffsetLag).
func (l *Log) LastStableOffsetLag() int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.hw - l.lastStableOffsetLocked()
}

// AbortedTransactions returns the aborted transactions that end at or
// after the log start offset and start before upperBoundOffset, read from
// the transaction indexes of the segments from the one holding
// startOffset on, until one entry's last stable offset reaches
// upperBoundOffset (Kafka's UnifiedLog.collectAbortedTransactions, which
// the log cleaner uses to drop aborted batches).
func (l *Log) AbortedTransactions(startOffset, upperBoundOffset int64) ([]AbortedTxn, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.collectAbortedLocked(startOffset, l.logStart, upperBoundOffset), nil
}

// collectAbortedLocked walks the transaction indexes from the segment
// holding segOffset (Kafka's LocalLog.collectAbortedTransactions). segMu
// held.
func (l *Log) collectAbortedLocked(segOffset, fetchOffset, upperBound int64) []AbortedTxn {
	out := []AbortedTxn{}
	for i := max(l.segmentFloor(segOffset), 0); i < len(l.segs); i++ {
		var done bool
		if out, done = l.segs[i].collectAbortedTxns(out, fetchOffset, upperBound); done {
			break
		}
	}
	return out
}

// ReadCommitted reads as Read does, up to maxOffset (the last stable
// offset), and adds the aborted transactions that overlap what it returns
// (Kafka's read with FetchIsolation.TXN_COMMITTED): those a
// read_committed consumer must skip. The list is empty, not nil, when
// there are none.
func (l *Log) ReadCommitted(offset int64, maxBytes int32, maxOffset int64, minOneMessage bool) (FetchData, error) {
	d, err := l.Read(offset, maxBytes, maxOffset, minOneMessage)
	if err != nil {
		return d, err
	}
	d.AbortedTransactions = []AbortedTxn{}
	if d.Records.Size > 0 && d.NextOffset > offset {
		l.segMu.RLock()
		d.AbortedTransactions = l.collectAbortedLocked(offset, offset, d.NextOffset)
		l.segMu.RUnlock()
	}
	return d, nil
}

// ActiveProducers returns the producers the log tracks (Kafka's
// activeProducers, for DescribeProducers), by producer id.
func (l *Log) ActiveProducers() []ProducerState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pstate.activeProducers()
}

// HasOngoingTransaction reports whether the producer has an open
// transaction on this partition at this epoch (Kafka's
// hasOngoingTransaction): a transactional produce to it needs no
// verification with the transaction coordinator.
func (l *Log) HasOngoingTransaction(producerID int64, producerEpoch int16) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pstate.hasOngoingTransaction(producerID, producerEpoch)
}

// RemoveExpiredProducers forgets producers with no open transaction whose
// last write is producer.id.expiration.ms old (Kafka's
// removeExpiredProducers, run every
// producer.id.expiration.check.interval.ms). It returns how many went.
func (l *Log) RemoveExpiredProducers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pstate.removeExpired(l.now().UnixMilli(), l.pidExpirationMs())
}

// loadProducerState rebuilds the producer state, the open transactions
// and the last stable offset from the newest snapshot at or below the log
// end and the batches after it (Kafka's rebuildProducerState and
// truncateAndReload), and the transaction indexes of the segments from
// rebuildTxnIndexFrom on (those recovery rewrote; the snapshot used is at
// or below it). Snapshots past the log end or below the log start are
// deleted first; snapshots are taken at the bases of the last two
// segments on the way and at the log end after. It returns the snapshot
// loaded (-1: none) and the number of batches replayed. l.mu held (or
// loading); l.leo, l.logStart and l.hw are set.
func (l *Log) loadProducerState(rebuildTxnIndexFrom int64) (snapshot int64, replayed int, err error) {
	leo, logStart := l.leo, l.logStart
	for _, off := range slices.Clone(l.snapshots) {
		// Kafka also deletes a snapshot at exactly the log start; it
		// holds the state of every producer whose data retention
		// deleted, so Moldau keeps it (see doc.go).
		if off > leo || off < logStart {
			l.deleteSnapshotNow(off)
		}
	}
	l.pstate = newProducerStateManager()
	l.segMu.Lock()
	l.unreplicated, l.firstUndecided = nil, -1
	l.segMu.Unlock()
	mapEnd := logStart
	l.lastSnap = logStart
	snapshot = l.loadLatestSnapshot(min(leo, rebuildTxnIndexFrom))
	if snapshot >= 0 {
		mapEnd, l.lastSnap = snapshot, snapshot
	}
	var toSnapshot []int64 // Kafka's offsetsToSnapshot
	for _, s := range l.segs[max(len(l.segs)-2, 0):] {
		toSnapshot = append(toSnapshot, s.baseOffset)
	}
	buf := make([]byte, BatchHeaderSize)
	for _, s := range l.segs {
		rebuild := s.baseOffset >= rebuildTxnIndexFrom
		if rebuild {
			l.segMu.Lock()
			s.txnIdx = nil
			l.segMu.Unlock()
			if err := s.truncateTxnIndexFile(0); err != nil {
				return snapshot, replayed, fmt.Errorf("resetting the transaction index of segment %d: %w", s.baseOffset, err)
			}
		}
		if s.nextOffset <= mapEnd || s.size == 0 {
			continue
		}
		start := max(s.baseOffset, mapEnd, logStart)
		if slices.Contains(toSnapshot, s.baseOffset) {
			if _, err := l.takeSnapshotAt(start, true); err != nil {
				l.logger.Warn("producer snapshot during load failed", "partition", l.tp.String(), "err", err)
			}
		}
		n, err := l.replaySegment(s, start, rebuild, buf)
		replayed += n
		if err != nil {
			return snapshot, replayed, err
		}
		mapEnd = s.nextOffset
	}
	l.segMu.Lock()
	l.firstUndecided = l.pstate.firstUndecidedOffset()
	l.pruneUnreplicatedLocked(l.hw)
	l.segMu.Unlock()
	if _, err := l.takeSnapshotAt(leo, true); err != nil {
		l.logger.Warn("producer snapshot after load failed", "partition", l.tp.String(), "err", err)
	}
	return snapshot, replayed, nil
}

// replaySegment updates the producer state from the batches of s from the
// one holding start on, read back without checks (AppendOrigin
// REPLICATION); with rebuild, aborts are written to s's transaction
// index. A batch the state refuses (a log no valid leader writes) is
// skipped with a warning.
func (l *Log) replaySegment(s *Segment, start int64, rebuild bool, buf []byte) (int, error) {
	pos, _, found, err := s.findBatch(start, int64(s.offIdx.Lookup(start).Position), s.size, buf)
	if err != nil {
		return 0, fmt.Errorf("rebuilding producer state of %s: %w", l.tp, err)
	}
	n := 0
	for found && pos < s.size {
		h, err := s.readHeader(pos, buf)
		if err != nil {
			return n, fmt.Errorf("rebuilding producer state of %s: %w", l.tp, err)
		}
		n++
		if h.ProducerID >= 0 {
			pb := producerBatch{
				pid: h.ProducerID, epoch: h.ProducerEpoch, firstSeq: h.BaseSequence,
				lastSeq: lastSequence(h.BaseSequence, h.LastOffsetDelta), firstOffset: h.BaseOffset,
				lastOffset: h.LastOffset(), maxTimestamp: h.MaxTimestamp,
				transactional: h.IsTransactional(), control: h.IsControl(),
			}
			if pb.control {
				batch, err := s.readBatch(pos, h)
				if err != nil {
					return n, err
				}
				if pb.marker, err = parseEndTxnMarker(batch); err != nil {
					l.logger.Warn("ignoring undecodable control batch", "partition", l.tp.String(), "offset", h.BaseOffset, "err", err)
				}
			}
			if _, _, err := l.pstate.prepare([]producerBatch{pb}, AppendOriginReplication, 0, false, SentinelGuard); err != nil {
				l.pstate.abandon()
				l.logger.Warn("producer state refuses a batch in the log; skipped", "partition", l.tp.String(), "offset", h.BaseOffset, "err", err)
			} else if err := l.completeTxns(s, l.pstate.commit(), rebuild); err != nil {
				return n, err
			}
		}
		pos += int64(h.TotalSize())
	}
	return n, nil
}

// resetProducerState forgets every producer and snapshot (a log started
// over at offset). l.mu held.
func (l *Log) resetProducerState(offset int64) {
	for _, off := range slices.Clone(l.snapshots) {
		l.deleteSnapshotNow(off)
	}
	l.pstate = newProducerStateManager()
	l.lastSnap = offset
	l.segMu.Lock()
	l.unreplicated, l.firstUndecided = nil, -1
	l.segMu.Unlock()
}

// defaultPidExpirationMs is producer.id.expiration.ms's default (1 day).
const defaultPidExpirationMs = 86400000

// noTxnIndexRebuild: loadProducerState rebuilds no transaction index.
const noTxnIndexRebuild = math.MaxInt64
