package log

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Producer state: Kafka's ProducerStateManager, ProducerStateEntry and
// ProducerAppendInfo. Per producer id the log remembers the epoch, the
// sequence and offset ranges of its last five batches (duplicate
// detection), the epoch of the last transaction coordinator that wrote a
// marker for it, and the first offset of its open transaction. The open
// transactions, ordered by first offset, give the last stable offset.
// All of it is guarded by Log.mu.

// numBatchesToRetain is how many batches per producer are remembered for
// duplicate detection (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
// matching max.in.flight.requests.per.connection <= 5).
const numBatchesToRetain = 5

// AppendOrigin is who appends to a log (Kafka's AppendOrigin); it decides
// which checks run.
type AppendOrigin int8

const (
	// AppendOriginReplication: batches a leader validated (a follower's
	// append, or the log read back at load). Producer state is updated
	// without checks.
	AppendOriginReplication AppendOrigin = iota
	// AppendOriginCoordinator: the group and transaction coordinators
	// (transaction markers, coordinator records). Producer epochs and
	// coordinator epochs are checked, sequences are not; control batches
	// are allowed.
	AppendOriginCoordinator
	// AppendOriginClient: a producer. Every check runs; control batches
	// are refused.
	AppendOriginClient
)

func (o AppendOrigin) String() string {
	switch o {
	case AppendOriginReplication:
		return "REPLICATION"
	case AppendOriginCoordinator:
		return "COORDINATOR"
	case AppendOriginClient:
		return "CLIENT"
	}
	return fmt.Sprintf("AppendOrigin(%d)", int8(o))
}

type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64
}

// producerEntry is one producer's state (Kafka's ProducerStateEntry).
type producerEntry struct {
	epoch   int16
	n       int
	batches [numBatchesToRetain]batchMeta // oldest first
	// coordinatorEpoch is the epoch of the last transaction coordinator
	// that wrote a marker for the producer (-1: none).
	coordinatorEpoch int32
	// lastTimestamp is the max timestamp of the last batch or the
	// timestamp of the last marker (-1: none); producer.id.expiration.ms
	// counts from it.
	lastTimestamp int64
	// currentTxnFirstOffset is the first offset of the open transaction
	// (-1: none).
	currentTxnFirstOffset int64
}

// emptyProducerEntry is Kafka's ProducerStateEntry.empty.
func emptyProducerEntry() producerEntry {
	return producerEntry{epoch: -1, coordinatorEpoch: -1, lastTimestamp: -1, currentTxnFirstOffset: -1}
}

func (e *producerEntry) push(m batchMeta) {
	if e.n == numBatchesToRetain {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = m
	e.n++
}

func (e *producerEntry) lastSeq() int32 {
	if e.n == 0 {
		return -1
	}
	return e.batches[e.n-1].lastSeq
}

func (e *producerEntry) findDuplicate(epoch int16, first, last int32) (batchMeta, bool) {
	if epoch != e.epoch {
		return batchMeta{}, false
	}
	for i := 0; i < e.n; i++ {
		if b := e.batches[i]; b.firstSeq == first && b.lastSeq == last {
			return b, true
		}
	}
	return batchMeta{}, false
}

// maybeUpdateEpoch moves the entry to epoch, forgetting the batches of
// another epoch (Kafka's maybeUpdateProducerEpoch).
func (e *producerEntry) maybeUpdateEpoch(epoch int16) {
	if e.epoch != epoch {
		e.n = 0
		e.epoch = epoch
	}
}

// txnStart is an open transaction: its producer and first offset (Kafka's
// TxnMetadata while ongoing).
type txnStart struct {
	pid         int64
	firstOffset int64
}

// txnEvent is a transaction starting or ending, in batch order, for
// commit: a start (completed == nil) or a completion.
type txnEvent struct {
	start     txnStart
	completed *completedTxn
}

// completedTxn is a transaction a marker ended (Kafka's CompletedTxn):
// lastOffset is the marker's offset.
type completedTxn struct {
	pid                     int64
	firstOffset, lastOffset int64
	aborted                 bool
}

// endTxnMarker is a decoded COMMIT or ABORT control record (Kafka's
// EndTransactionMarker) with the record's timestamp.
type endTxnMarker struct {
	typ              int16 // ControlAbort or ControlCommit
	coordinatorEpoch int32
	timestamp        int64
}

// producerBatch is what producer state needs of one batch.
type producerBatch struct {
	pid                     int64
	epoch                   int16
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	maxTimestamp            int64
	transactional, control  bool
	// marker is the control batch's marker; nil for a control batch
	// without records (the cleaner removed its transaction: no effect).
	marker *endTxnMarker
}

type pendingProducer struct {
	pid       int64
	entry     producerEntry
	origEpoch int16 // the committed entry's epoch (-1 for a new producer)
	// wroteTxn: a transactional batch or a marker of the producer is in
	// the append, which retires its verification guard.
	wroteTxn bool
}

// producerStateManager is Kafka's ProducerStateManager, in memory (the
// snapshot files are the Log's, producer_snapshot.go). Guarded by Log.mu.
type producerStateManager struct {
	producers map[int64]*producerEntry
	// ongoing are the open transactions sorted by first offset
	// (Kafka's ongoingTxns). A producer has at most one.
	ongoing []txnStart
	// verifications are the transaction verifications in progress, by
	// producer id (Kafka's verificationStates; verification.go).
	verifications map[int64]*verificationState

	// What the last prepare found, applied by commit: the updated
	// entries and the transactions started and completed, in order.
	pending []pendingProducer
	events  []txnEvent
}

func newProducerStateManager() producerStateManager {
	return producerStateManager{producers: make(map[int64]*producerEntry)}
}

func (m *producerStateManager) pendingFor(pid int64) *pendingProducer {
	for i := range m.pending {
		if m.pending[i].pid == pid {
			return &m.pending[i]
		}
	}
	p := pendingProducer{pid: pid, entry: emptyProducerEntry(), origEpoch: -1}
	if e, ok := m.producers[pid]; ok {
		p.entry, p.origEpoch = *e, e.epoch
	}
	m.pending = append(m.pending, p)
	return &m.pending[len(m.pending)-1]
}

func inSequence(lastSeq, nextSeq int32) bool {
	return int64(nextSeq) == int64(lastSeq)+1 || (nextSeq == 0 && lastSeq == math.MaxInt32)
}

// decrementSequence is Kafka's DefaultRecordBatch.decrementSequence.
func decrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}

// prepare checks the batches against the producer state without changing
// it (Kafka's analyzeAndValidateProducerState with ProducerAppendInfo) and
// keeps the updates pending until commit. For a client append, a batch
// that duplicates one of the producer's last five is returned instead
// (the append then answers with the original offsets). tv is the
// transaction version of a marker (KIP-1228; < 2 for the classic
// protocol). Errors wrap Kafka's codes: INVALID_PRODUCER_EPOCH,
// OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_TXN_STATE,
// TRANSACTION_COORDINATOR_FENCED; a replication append never fails on
// epochs, only on a non-transactional batch inside a transaction. With
// verify, a transactional batch that opens a transaction must bring the
// guard of its verification (verification.go).
func (m *producerStateManager) prepare(batches []producerBatch, origin AppendOrigin, tv int16, verify bool, guard VerificationGuard) (batchMeta, bool, error) {
	m.pending, m.events = m.pending[:0], m.events[:0]
	for i := range batches {
		b := &batches[i]
		if b.pid < 0 {
			continue
		}
		if origin == AppendOriginClient {
			if e, ok := m.producers[b.pid]; ok && !b.control {
				if dup, ok := e.findDuplicate(b.epoch, b.firstSeq, b.lastSeq); ok {
					return dup, true, nil
				}
			}
		}
		p := m.pendingFor(b.pid)
		if verify {
			if err := m.checkVerification(p, b, guard); err != nil {
				return batchMeta{}, false, err
			}
		}
		p.wroteTxn = p.wroteTxn || b.transactional
		var err error
		if b.control {
			err = m.appendEndTxnMarker(p, b, origin, tv)
		} else {
			err = m.appendDataBatch(p, b, origin)
		}
		if err != nil {
			return batchMeta{}, false, err
		}
	}
	return batchMeta{}, false, nil
}

// checkProducerEpoch is ProducerAppendInfo.checkProducerEpoch: an older
// epoch is INVALID_PRODUCER_EPOCH (not PRODUCER_FENCED, since Kafka 2.7,
// so that a transactional producer can abort and retry); a marker of
// transaction version 2 must carry a newer epoch than the producer's.
func checkProducerEpoch(p *pendingProducer, epoch int16, offset int64, origin AppendOrigin, tv int16) error {
	cur := p.entry.epoch
	invalid := epoch < cur
	if tv >= 2 {
		invalid = epoch <= cur
	}
	if invalid && origin != AppendOriginReplication {
		cmp := "smaller than"
		if tv >= 2 {
			cmp = "not larger than"
		}
		return fmt.Errorf("%w: epoch of producer %d at offset %d is %d, which is %s the last seen epoch %d", kerr.InvalidProducerEpoch, p.pid, offset, epoch, cmp, cur)
	}
	return nil
}

// checkSequence is ProducerAppendInfo.checkSequence (client appends).
func checkSequence(p *pendingProducer, epoch int16, firstSeq int32, offset int64) error {
	e := &p.entry
	if epoch != e.epoch {
		if firstSeq != 0 && e.epoch != -1 {
			return fmt.Errorf("%w: invalid sequence number for new epoch of producer %d at offset %d: %d (request epoch), %d (seq. number), %d (current producer epoch)",
				kerr.OutOfOrderSequenceNumber, p.pid, offset, epoch, firstSeq, e.epoch)
		}
		return nil
	}
	// A producer whose state was lost (all its data deleted by
	// retention or DeleteRecords) may continue at any sequence.
	if p.origEpoch == -1 || inSequence(e.lastSeq(), firstSeq) {
		return nil
	}
	return fmt.Errorf("%w: out of order sequence number for producer %d at offset %d: %d (incoming seq. number), %d (current end sequence number)",
		kerr.OutOfOrderSequenceNumber, p.pid, offset, firstSeq, e.lastSeq())
}

// appendDataBatch is ProducerAppendInfo.appendDataBatch.
func (m *producerStateManager) appendDataBatch(p *pendingProducer, b *producerBatch, origin AppendOrigin) error {
	if err := checkProducerEpoch(p, b.epoch, b.firstOffset, origin, -1); err != nil {
		return err
	}
	if origin == AppendOriginClient {
		if err := m.checkVerificationSequence(b); err != nil {
			return err
		}
		if err := checkSequence(p, b.epoch, b.firstSeq, b.firstOffset); err != nil {
			return err
		}
	}
	e := &p.entry
	e.maybeUpdateEpoch(b.epoch)
	e.push(batchMeta{firstSeq: b.firstSeq, lastSeq: b.lastSeq, firstOffset: b.firstOffset, lastOffset: b.lastOffset, timestamp: b.maxTimestamp})
	e.lastTimestamp = b.maxTimestamp
	switch {
	case e.currentTxnFirstOffset >= 0 && !b.transactional:
		return fmt.Errorf("%w: expected a transactional write from producer %d at offset %d: its transaction from offset %d is open",
			kerr.InvalidTxnState, p.pid, b.firstOffset, e.currentTxnFirstOffset)
	case e.currentTxnFirstOffset < 0 && b.transactional:
		e.currentTxnFirstOffset = b.firstOffset
		m.events = append(m.events, txnEvent{start: txnStart{pid: p.pid, firstOffset: b.firstOffset}})
	}
	return nil
}

// appendEndTxnMarker is ProducerAppendInfo.appendEndTxnMarker. A marker
// for a producer with no open transaction is accepted and completes
// nothing (the coordinator retries markers).
func (m *producerStateManager) appendEndTxnMarker(p *pendingProducer, b *producerBatch, origin AppendOrigin, tv int16) error {
	mk := b.marker
	if mk == nil {
		return nil // an empty control batch: its transaction was cleaned away
	}
	if origin == AppendOriginReplication {
		tv = 0 // the leader checked; the follower takes the lenient rule
	}
	if err := checkProducerEpoch(p, b.epoch, b.firstOffset, origin, tv); err != nil {
		return err
	}
	e := &p.entry
	if e.coordinatorEpoch > mk.coordinatorEpoch && origin != AppendOriginReplication {
		return fmt.Errorf("%w: invalid coordinator epoch for producer %d at offset %d: %d (zombie), %d (current)",
			kerr.TransactionCoordinatorFenced, p.pid, b.firstOffset, mk.coordinatorEpoch, e.coordinatorEpoch)
	}
	if e.currentTxnFirstOffset >= 0 {
		c := completedTxn{pid: p.pid, firstOffset: e.currentTxnFirstOffset, lastOffset: b.firstOffset, aborted: mk.typ == ControlAbort}
		m.events = append(m.events, txnEvent{completed: &c})
	}
	e.maybeUpdateEpoch(b.epoch)
	e.coordinatorEpoch = mk.coordinatorEpoch
	e.currentTxnFirstOffset = -1
	e.lastTimestamp = mk.timestamp
	return nil
}

// commit applies the entry updates of the last prepare and returns its
// transaction events in batch order; the caller applies them with
// applyEvent (completeTxns), so that an abort's index entry sees exactly
// the transactions open at its marker.
func (m *producerStateManager) commit() []txnEvent {
	for i := range m.pending {
		p := &m.pending[i]
		if e, ok := m.producers[p.pid]; ok {
			*e = p.entry
		} else {
			e := p.entry
			m.producers[p.pid] = &e
		}
		if p.wroteTxn {
			// Its transaction is open (a first offset) or ended:
			// the guard has served (Kafka's updateProducers).
			delete(m.verifications, p.pid)
		}
	}
	m.pending = m.pending[:0]
	return m.events
}

// abandon drops the updates of the last prepare.
func (m *producerStateManager) abandon() {
	m.pending, m.events = m.pending[:0], m.events[:0]
}

func (m *producerStateManager) addOngoing(s txnStart) {
	// Transactions start in offset order, so this is almost always an
	// append at the end.
	i := len(m.ongoing)
	for i > 0 && m.ongoing[i-1].firstOffset > s.firstOffset {
		i--
	}
	m.ongoing = slices.Insert(m.ongoing, i, s)
}

// lastStableOffsetFor is the last stable offset once c completes (Kafka's
// lastStableOffset(CompletedTxn)): the first offset of the earliest other
// open transaction, else the offset after c's marker. It is what an
// aborted transaction's index entry records.
func (m *producerStateManager) lastStableOffsetFor(c completedTxn) int64 {
	for _, t := range m.ongoing {
		if t.pid != c.pid {
			return t.firstOffset
		}
	}
	return c.lastOffset + 1
}

// completeTxn removes c from the open transactions.
func (m *producerStateManager) completeTxn(c completedTxn) {
	i := sort.Search(len(m.ongoing), func(i int) bool { return m.ongoing[i].firstOffset >= c.firstOffset })
	if i < len(m.ongoing) && m.ongoing[i].firstOffset == c.firstOffset {
		m.ongoing = slices.Delete(m.ongoing, i, i+1)
	}
}

// firstUndecidedOffset is the first offset of the earliest open
// transaction, -1 if none (Kafka's firstUndecidedOffset).
func (m *producerStateManager) firstUndecidedOffset() int64 {
	if len(m.ongoing) == 0 {
		return -1
	}
	return m.ongoing[0].firstOffset
}

// isExpired is Kafka's isProducerExpired: no open transaction and no write
// for producer.id.expiration.ms.
func isExpired(e *producerEntry, nowMs, expirationMs int64) bool {
	return e.currentTxnFirstOffset < 0 && nowMs-e.lastTimestamp >= expirationMs
}

// removeExpired forgets expired producers and returns how many.
func (m *producerStateManager) removeExpired(nowMs, expirationMs int64) int {
	m.removeExpiredVerifications(nowMs, expirationMs)
	n := 0
	for pid, e := range m.producers {
		if isExpired(e, nowMs, expirationMs) {
			delete(m.producers, pid)
			n++
		}
	}
	return n
}

// loadEntry adds a producer read from a snapshot (Kafka's
// loadProducerEntry).
func (m *producerStateManager) loadEntry(pid int64, e producerEntry) {
	m.producers[pid] = &e
	if e.currentTxnFirstOffset >= 0 {
		m.addOngoing(txnStart{pid: pid, firstOffset: e.currentTxnFirstOffset})
	}
}

// hasOngoingTransaction reports whether the producer has an open
// transaction at epoch.
func (m *producerStateManager) hasOngoingTransaction(pid int64, epoch int16) bool {
	e, ok := m.producers[pid]
	return ok && e.currentTxnFirstOffset >= 0 && e.epoch == epoch
}

// numProducers is the number of producers tracked.
func (m *producerStateManager) numProducers() int { return len(m.producers) }

// ProducerState is one active producer of a partition, as DescribeProducers
// reports it (Kafka's DescribeProducersResponseData.ProducerState).
type ProducerState struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32 // -1 if no batch is remembered
	LastTimestamp         int64 // -1 if none
	CoordinatorEpoch      int32 // -1 if no marker was written
	CurrentTxnStartOffset int64 // -1 if no open transaction
}

// activeProducers lists the producers, by producer id.
func (m *producerStateManager) activeProducers() []ProducerState {
	out := make([]ProducerState, 0, len(m.producers))
	for pid, e := range m.producers {
		out = append(out, ProducerState{
			ProducerID: pid, ProducerEpoch: e.epoch, LastSequence: e.lastSeq(), LastTimestamp: e.lastTimestamp,
			CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.currentTxnFirstOffset,
		})
	}
	slices.SortFunc(out, func(a, b ProducerState) int { return cmpInt64(a.ProducerID, b.ProducerID) })
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
