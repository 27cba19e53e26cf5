package txn

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/moldau/moldau/log"
)

// State is a transaction's state (Kafka's TransactionState); its value is
// the id stored in __transaction_state and its String the name
// DescribeTransactions and ListTransactions show.
type State int8

// Kafka's states and their ids.
const (
	// Empty: no transaction (after InitProducerId, or none begun).
	Empty State = 0
	// Ongoing: partitions were added; EndTxn moves it on.
	Ongoing State = 1
	// PrepareCommit: EndTxn(commit) is durable; markers are being written.
	PrepareCommit State = 2
	// PrepareAbort: EndTxn(abort), a timeout or a fence is durable;
	// markers are being written.
	PrepareAbort State = 3
	// CompleteCommit: every COMMIT marker is written.
	CompleteCommit State = 4
	// CompleteAbort: every ABORT marker is written.
	CompleteAbort State = 5
	// Dead: the transactional id expired (never stored: its tombstone is).
	Dead State = 6
	// PrepareEpochFence: a newer producer is fencing this one; the
	// ongoing transaction is aborted at a bumped epoch (transient, never
	// stored: the abort is).
	PrepareEpochFence State = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// stateByName is Kafka's TransactionState.fromName (exact names).
func stateByName(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// validPrevious are the states a transition to each state may start from
// (Kafka's validPreviousStates).
var validPrevious = map[State][]State{
	Empty:         {Empty, CompleteCommit, CompleteAbort},
	Ongoing:       {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit: {Ongoing},
	// Under transaction version 2 an abort with nothing in the
	// transaction starts from Empty or a completed one (KAFKA-14563).
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// expirationAllowed: a transactional id idle in this state may expire.
func (s State) expirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// Transaction versions (Kafka's TransactionVersion, the transaction.version
// feature): 1 writes flexible __transaction_state values, 2 bumps the
// producer epoch at every EndTxn (KIP-890 part 2).
const (
	tv0 int16 = 0
	tv1 int16 = 1
	tv2 int16 = 2
)

func supportsEpochBump(tv int16) bool { return tv >= tv2 }

const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// epochExhausted is Kafka's isEpochExhausted: epoch Short.MaxValue is kept
// so that the coordinator can always fence a producer.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// txnMetadata is one transactional id's state (Kafka's TransactionMetadata).
// It lives in a shard and is used only on the shard's goroutine.
type txnMetadata struct {
	id                string
	producerID        int64
	prevProducerID    int64 // the producer id of the last committed transaction
	nextProducerID    int64 // TV2: the id the producer moves to after an epoch overflow
	producerEpoch     int16
	lastProducerEpoch int16
	timeoutMs         int32
	state             State
	partitions        map[log.TopicPartition]struct{}
	startTimestamp    int64 // ms; -1: no transaction
	lastUpdate        int64 // ms
	clientTV          int16 // the transaction version of the last transition
	// ended is when this coordinator moved the transaction to
	// PrepareCommit or PrepareAbort (zero: before this load), for the
	// marker latency.
	ended time.Time
}

func newTxnMetadata(id string, producerID int64, timeoutMs int32, now int64) *txnMetadata {
	return &txnMetadata{
		id: id, producerID: producerID, prevProducerID: noProducerID, nextProducerID: noProducerID,
		producerEpoch: noProducerEpoch, lastProducerEpoch: noProducerEpoch, timeoutMs: timeoutMs,
		state: Empty, partitions: map[log.TopicPartition]struct{}{}, startTimestamp: -1, lastUpdate: now,
	}
}

// sortedPartitions are the transaction's partitions by topic and partition.
func (m *txnMetadata) sortedPartitions() []log.TopicPartition {
	out := make([]log.TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	sortPartitions(out)
	return out
}

func sortPartitions(tps []log.TopicPartition) {
	slices.SortFunc(tps, func(a, b log.TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
}

func (m *txnMetadata) String() string {
	return fmt.Sprintf("TransactionMetadata(transactionalId=%s, producerId=%d, previousProducerId=%d, nextProducerId=%d, producerEpoch=%d, lastProducerEpoch=%d, txnTimeoutMs=%d, state=%s, partitions=%d, txnStartTimestamp=%d, txnLastUpdateTimestamp=%d, clientTransactionVersion=%d)",
		m.id, m.producerID, m.prevProducerID, m.nextProducerID, m.producerEpoch, m.lastProducerEpoch, m.timeoutMs, m.state, len(m.partitions), m.startTimestamp, m.lastUpdate, m.clientTV)
}

// transit is a transition to apply (Kafka's TxnTransitMetadata): what is
// written to __transaction_state, and applied to the metadata at once
// (the runtime makes it durable before anyone is answered, and reloads
// the shard if it is not).
type transit struct {
	producerID        int64
	prevProducerID    int64
	nextProducerID    int64
	producerEpoch     int16
	lastProducerEpoch int16
	timeoutMs         int32
	state             State
	partitions        []log.TopicPartition // sorted
	startTimestamp    int64
	lastUpdate        int64
	clientTV          int16
}

// errIllegalTransition is a bug: Kafka throws IllegalStateException.
type errIllegalTransition struct{ msg string }

func (e errIllegalTransition) Error() string { return e.msg }

// prepareTransition is Kafka's prepareTransitionTo: it checks that the
// state may be entered from the current one.
func (m *txnMetadata) prepareTransition(to State, producerID, nextProducerID int64, epoch, lastEpoch int16, timeoutMs int32,
	partitions []log.TopicPartition, start, now int64, tv int16) (transit, error) {
	if producerID < 0 {
		return transit{}, errIllegalTransition{fmt.Sprintf("illegal new producer id %d for %s", producerID, m.id)}
	}
	if to != Dead && epoch < 0 {
		return transit{}, errIllegalTransition{fmt.Sprintf("illegal new producer epoch %d for %s", epoch, m.id)}
	}
	if !slices.Contains(validPrevious[to], m.state) {
		return transit{}, errIllegalTransition{fmt.Sprintf("transaction %s: %s is not a valid previous state of %s", m.id, m.state, to)}
	}
	return transit{
		producerID: producerID, prevProducerID: m.producerID, nextProducerID: nextProducerID,
		producerEpoch: epoch, lastProducerEpoch: lastEpoch, timeoutMs: timeoutMs, state: to,
		partitions: partitions, startTimestamp: start, lastUpdate: now, clientTV: tv,
	}, nil
}

// prepareIncrementProducerEpoch is InitProducerId's epoch bump (KIP-360:
// a producer that names its current epoch may continue after an error;
// one that names the previous epoch is retrying a bump it did not see
// answered).
func (m *txnMetadata) prepareIncrementProducerEpoch(timeoutMs int32, expected *int16, now int64) (transit, error) {
	if epochExhausted(m.producerEpoch) {
		return transit{}, errIllegalTransition{fmt.Sprintf("cannot allocate any more producer epochs for producer id %d", m.producerID)}
	}
	bumped := m.producerEpoch + 1
	next, last := bumped, noProducerEpoch
	if expected != nil {
		switch {
		case m.producerEpoch == noProducerEpoch || *expected == m.producerEpoch:
			next, last = bumped, m.producerEpoch
		case *expected == m.lastProducerEpoch:
			next, last = m.producerEpoch, m.lastProducerEpoch
		default:
			return transit{}, errProducerFenced(m, *expected)
		}
	}
	return m.prepareTransition(Empty, m.producerID, noProducerID, next, last, timeoutMs, nil, -1, now, tv0)
}

// prepareProducerIDRotation moves to a new producer id once the epochs of
// the current one are exhausted.
func (m *txnMetadata) prepareProducerIDRotation(newProducerID int64, timeoutMs int32, now int64, recordLastEpoch bool) (transit, error) {
	if m.state == Ongoing || m.state == PrepareAbort || m.state == PrepareCommit {
		return transit{}, errIllegalTransition{"cannot rotate producer ids while a transaction is still pending"}
	}
	last := noProducerEpoch
	if recordLastEpoch {
		last = m.producerEpoch
	}
	return m.prepareTransition(Empty, newProducerID, noProducerID, 0, last, timeoutMs, nil, -1, now, tv0)
}

// prepareAddPartitions adds partitions to the transaction (Ongoing); a
// transaction begins with its first partition.
func (m *txnMetadata) prepareAddPartitions(add []log.TopicPartition, now int64) (transit, error) {
	start := m.startTimestamp
	if m.state == Empty || m.state == CompleteAbort || m.state == CompleteCommit {
		start = now
	}
	all := make(map[log.TopicPartition]struct{}, len(m.partitions)+len(add))
	for tp := range m.partitions {
		all[tp] = struct{}{}
	}
	for _, tp := range add {
		all[tp] = struct{}{}
	}
	tps := make([]log.TopicPartition, 0, len(all))
	for tp := range all {
		tps = append(tps, tp)
	}
	sortPartitions(tps)
	return m.prepareTransition(Ongoing, m.producerID, noProducerID, m.producerEpoch, m.lastProducerEpoch, m.timeoutMs, tps, start, now, tv0)
}

// prepareAbortOrCommit ends the transaction (PrepareCommit or
// PrepareAbort); with transaction version 2 the epoch is bumped.
//
// fenced: the epoch was just bumped to fence the producer (InitProducerId
// or a timeout), and is not bumped again (KAFKA-19367). A transaction
// with nothing in it (an empty abort) starts now.
func (m *txnMetadata) prepareAbortOrCommit(to State, tv int16, nextProducerID int64, now int64, fenced bool) (transit, error) {
	epoch, last := m.producerEpoch, m.lastProducerEpoch
	if supportsEpochBump(tv) && !fenced {
		epoch, last = m.producerEpoch+1, m.producerEpoch
	}
	start := m.startTimestamp
	if m.state != Ongoing {
		start = now
	}
	return m.prepareTransition(to, m.producerID, nextProducerID, epoch, last, m.timeoutMs, m.sortedPartitions(), start, now, tv)
}

// prepareComplete records that every marker is written (CompleteCommit or
// CompleteAbort); after an epoch overflow (TV2) the producer moves to its
// next producer id.
func (m *txnMetadata) prepareComplete(now int64) (transit, error) {
	to := CompleteAbort
	if m.state == PrepareCommit {
		to = CompleteCommit
	}
	pid, epoch := m.afterComplete()
	// The last epoch stays the one the client last saw: the epoch before
	// the bump (Short.MaxValue - 1 after an overflow; the client never
	// sees Short.MaxValue), so that InitProducerId naming it is a retry
	// (KIP-360), as in Kafka's prepareComplete.
	return m.prepareTransition(to, pid, noProducerID, epoch, m.lastProducerEpoch, m.timeoutMs, nil, m.startTimestamp, now, m.clientTV)
}

// afterComplete is the producer id and epoch a transaction in
// PrepareCommit or PrepareAbort completes with: after an epoch overflow
// under transaction version 2, the next producer id at epoch 0.
func (m *txnMetadata) afterComplete() (int64, int16) {
	if supportsEpochBump(m.clientTV) && m.nextProducerID != noProducerID {
		return m.nextProducerID, 0
	}
	return m.producerID, m.producerEpoch
}

// prepareFenceProducerEpoch bumps the epoch to fence the current producer
// before its ongoing transaction is aborted (PrepareEpochFence; the bumped
// epoch is never returned to a client).
func (m *txnMetadata) prepareFenceProducerEpoch() (int16, error) {
	if m.producerEpoch == math.MaxInt16 {
		return 0, errIllegalTransition{"cannot fence a producer at epoch Short.MaxValue"}
	}
	if !slices.Contains(validPrevious[PrepareEpochFence], m.state) {
		return 0, errIllegalTransition{fmt.Sprintf("transaction %s: cannot fence from %s", m.id, m.state)}
	}
	return m.producerEpoch + 1, nil
}

// apply is Kafka's completeTransitionTo: the fields each target state
// takes from the transition.
func (m *txnMetadata) apply(t transit) {
	switch t.state {
	case Empty:
		m.timeoutMs = t.timeoutMs
		m.producerEpoch, m.lastProducerEpoch = t.producerEpoch, t.lastProducerEpoch
		m.producerID, m.prevProducerID = t.producerID, t.prevProducerID
	case Ongoing:
		m.startTimestamp = t.startTimestamp
		for _, tp := range t.partitions {
			m.partitions[tp] = struct{}{}
		}
	case PrepareCommit, PrepareAbort:
		m.startTimestamp = t.startTimestamp
		if supportsEpochBump(t.clientTV) {
			m.producerEpoch, m.lastProducerEpoch = t.producerEpoch, t.lastProducerEpoch
			m.nextProducerID = t.nextProducerID
		}
	case CompleteCommit, CompleteAbort:
		m.startTimestamp = t.startTimestamp
		clear(m.partitions)
		if supportsEpochBump(t.clientTV) {
			m.producerEpoch, m.lastProducerEpoch = t.producerEpoch, t.lastProducerEpoch
			m.prevProducerID, m.producerID = t.prevProducerID, t.producerID
			m.nextProducerID = t.nextProducerID
		}
	}
	m.clientTV = t.clientTV
	m.lastUpdate = t.lastUpdate
	m.state = t.state
}

// fromTransit rebuilds metadata from a stored value (Kafka's
// readTxnRecordValue): the last producer epoch is not stored.
func fromTransit(id string, t transit) *txnMetadata {
	m := newTxnMetadata(id, t.producerID, t.timeoutMs, t.lastUpdate)
	m.prevProducerID, m.nextProducerID = t.prevProducerID, t.nextProducerID
	m.producerEpoch = t.producerEpoch
	m.state = t.state
	m.startTimestamp = t.startTimestamp
	m.clientTV = t.clientTV
	if t.state != Empty {
		for _, tp := range t.partitions {
			m.partitions[tp] = struct{}{}
		}
	}
	if supportsEpochBump(t.clientTV) && rotating(t) {
		m.lastProducerEpoch = math.MaxInt16 - 1
	}
	return m
}

// rotating reports a stored transition of a producer id rotation under
// transaction version 2: ending with a next producer id, or completed
// under it. The last epoch is not stored (Kafka stores it only from
// KAFKA-20357), but there it can only be the one the client last saw
// before the overflow, Short.MaxValue - 1: restoring it keeps a retried
// InitProducerId at the old id and epoch a retry after a reload (KIP-360).
func rotating(t transit) bool {
	switch t.state {
	case PrepareCommit, PrepareAbort:
		return t.nextProducerID != noProducerID
	case CompleteCommit, CompleteAbort:
		return t.producerEpoch == 0 && t.prevProducerID != noProducerID && t.prevProducerID != t.producerID
	}
	return false
}
