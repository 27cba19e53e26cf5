package log

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// abortedTxnsFunc returns the aborted transactions of l overlapping
// [from, upper): LastOffset >= from and FirstOffset < upper (Kafka's
// UnifiedLog.collectAbortedTransactions, which reads the .txnindex files).
type abortedTxnsFunc func(l *Log, from, upper int64) ([]AbortedTxn, error)

// lastRecord is what the cleaner must keep of an active producer (Kafka's
// LastRecord): the last offset of its last data batch (-1 if its last
// entry is a transaction marker), and its epoch.
type lastRecord struct {
	lastDataOffset int64
	producerEpoch  int16
}

// controlRecordType reads the type of a control batch from its first
// record's key (version int16, type int16; Kafka's ControlRecordType.parse).
// ok is false for a batch without records (already cleaned) or a key too
// short to hold a type.
func controlRecordType(key []byte) (typ int16, ok bool) {
	if len(key) < 4 {
		return 0, false
	}
	return int16(binary.BigEndian.Uint16(key[2:])), true
}

// cleanedTransactionMetadata follows transactions while the cleaner walks
// the log (Kafka's CleanedTransactionMetadata): it knows the aborted
// transactions ahead of time (from the transaction index) and decides
// which batches belong to aborted transactions (removed) and which
// transaction markers may go (the two-pass rule: a marker is kept until no
// batch of its transaction is left, and then until its delete horizon
// passes, like a tombstone).
type cleanedTransactionMetadata struct {
	ongoingCommitted map[int64]struct{}
	ongoingAborted   map[int64]*abortedTxnMetadata
	pending          []AbortedTxn // not yet reached, sorted by FirstOffset
	seen             map[AbortedTxn]struct{}
	// retained are the aborted transactions whose ABORT marker the
	// cleaned segment keeps: its .txnindex (Kafka's cleanedIndex).
	retained []AbortedTxn
}

type abortedTxnMetadata struct {
	txn AbortedTxn
	// observed: a batch of the transaction was seen (and removed) in
	// this pass; lastObservedBatchOffset is Kafka's Option.
	observed bool
}

func newCleanedTransactionMetadata() *cleanedTransactionMetadata {
	return &cleanedTransactionMetadata{
		ongoingCommitted: make(map[int64]struct{}),
		ongoingAborted:   make(map[int64]*abortedTxnMetadata),
		seen:             make(map[AbortedTxn]struct{}),
	}
}

// addAbortedTransactions adds aborted transactions found ahead. A
// transaction reported twice (it overlaps two ranges asked for) is kept
// once.
func (m *cleanedTransactionMetadata) addAbortedTransactions(txns []AbortedTxn) {
	added := false
	for _, t := range txns {
		if _, dup := m.seen[t]; dup {
			continue
		}
		m.seen[t] = struct{}{}
		m.pending = append(m.pending, t)
		added = true
	}
	if added {
		slices.SortStableFunc(m.pending, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	}
}

func (m *cleanedTransactionMetadata) consumeAbortedTxnsUpTo(offset int64) {
	n := 0
	for n < len(m.pending) && m.pending[n].FirstOffset <= offset {
		t := m.pending[n]
		if _, ok := m.ongoingAborted[t.ProducerID]; !ok {
			m.ongoingAborted[t.ProducerID] = &abortedTxnMetadata{txn: t}
		}
		n++
	}
	m.pending = m.pending[n:]
}

// onControlBatchRead updates the state with a control batch and reports
// whether it may be discarded (once its delete horizon has passed).
// hasRecord is false for a control batch left empty by an earlier
// cleaning; typ is the type of its record.
func (m *cleanedTransactionMetadata) onControlBatchRead(h *BatchHeader, typ int16, hasRecord bool) bool {
	m.consumeAbortedTxnsUpTo(h.LastOffset())
	if !hasRecord {
		return true // already cleaned: safe to discard
	}
	switch typ {
	case ControlAbort:
		meta, ok := m.ongoingAborted[h.ProducerID]
		delete(m.ongoingAborted, h.ProducerID)
		if ok && meta.observed {
			// Keep the marker until every batch of the transaction is
			// gone; the cleaned segment's txnindex keeps the entry.
			m.retained = append(m.retained, meta.txn)
			return false
		}
		return true
	case ControlCommit:
		// Discardable if no batch of the transaction was seen.
		_, seen := m.ongoingCommitted[h.ProducerID]
		delete(m.ongoingCommitted, h.ProducerID)
		return !seen
	}
	return false
}

// onBatchRead updates the state with a data batch and reports whether it
// belongs to an aborted transaction (and may be discarded).
func (m *cleanedTransactionMetadata) onBatchRead(h *BatchHeader) bool {
	m.consumeAbortedTxnsUpTo(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if meta, ok := m.ongoingAborted[h.ProducerID]; ok {
		meta.observed = true
		return true
	}
	m.ongoingCommitted[h.ProducerID] = struct{}{}
	return false
}
