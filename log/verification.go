package log

import (
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Transaction verification (KIP-890 part 1, Kafka's VerificationGuard and
// VerificationStateEntry). Before a partition leader writes the first
// batch of a producer's transaction it asks the transaction coordinator
// whether the partition is in the producer's ongoing transaction (or, with
// transaction version 2, adds it). Between that question and the append a
// marker can end the transaction; and a stale "yes" could otherwise let a
// late batch open a transaction the coordinator knows nothing of, which
// would hold the last stable offset back for good (a hanging
// transaction). So the log hands out a guard when verification starts,
// the append must bring the same guard back, and any transactional write
// of the producer (its first data batch, or a marker) retires the guard:
// an append whose guard was retired, or that brings none, fails with
// INVALID_TXN_STATE and the producer retries from the question.

// VerificationGuard identifies one verification of a producer's
// transaction on a log. The zero value, SentinelGuard, verifies nothing.
type VerificationGuard uint64

// SentinelGuard is what MaybeStartTransactionVerification returns when the
// producer's transaction is already open on the log (no verification is
// needed), and what an append brings when it was not verified.
const SentinelGuard VerificationGuard = 0

var lastGuard atomic.Uint64

// verificationState is Kafka's VerificationStateEntry: the guard of a
// verification in progress, and the lowest sequence seen while verifying,
// so that a higher sequence is not written before a lower one that is
// being retried.
type verificationState struct {
	guard     VerificationGuard
	createdMs int64
	lowestSeq int32
	epoch     int16
}

// maybeUpdateLowestSequenceAndEpoch is Kafka's method of that name: a
// lower sequence at the same epoch, or any sequence at a newer epoch,
// becomes the lowest.
func (v *verificationState) maybeUpdateLowestSequenceAndEpoch(seq int32, epoch int16) {
	if epoch == v.epoch && seq < v.lowestSeq {
		v.lowestSeq = seq
	}
	if epoch > v.epoch {
		v.epoch, v.lowestSeq = epoch, seq
	}
}

// MaybeStartTransactionVerification returns the guard a transactional
// append of the producer must bring, creating it if no verification is in
// progress (Kafka's maybeStartTransactionVerification); SentinelGuard when
// the producer's transaction is already open on this log at this epoch,
// so that no verification is needed.
func (l *Log) MaybeStartTransactionVerification(producerID int64, sequence int32, epoch int16) VerificationGuard {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := &l.pstate
	if m.hasOngoingTransaction(producerID, epoch) {
		return SentinelGuard
	}
	if m.verifications == nil {
		m.verifications = make(map[int64]*verificationState)
	}
	v, ok := m.verifications[producerID]
	if !ok {
		v = &verificationState{guard: VerificationGuard(lastGuard.Add(1)), createdMs: l.now().UnixMilli(), lowestSeq: sequence, epoch: epoch}
		m.verifications[producerID] = v
	}
	v.maybeUpdateLowestSequenceAndEpoch(sequence, epoch)
	return v.guard
}

// TransactionVerificationCurrent reports whether guard is still the
// producer's verification guard: false once a transactional write of the
// producer (a marker, most likely) has retired it.
func (l *Log) TransactionVerificationCurrent(producerID int64, guard VerificationGuard) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.pstate.verifications[producerID]
	return ok && guard != SentinelGuard && v.guard == guard
}

// AbandonTransactionVerification forgets the producer's verification if
// guard is still its guard: the coordinator refused it for good, and a
// later attempt starts afresh. (Kafka keeps the entry until the producer
// expires; dropping it bounds what a client naming unknown producers can
// make the log hold.)
func (l *Log) AbandonTransactionVerification(producerID int64, guard VerificationGuard) {
	if guard == SentinelGuard {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.pstate.verifications[producerID]; ok && v.guard == guard {
		delete(l.pstate.verifications, producerID)
	}
}

// checkVerification refuses a transactional data batch that would open a
// transaction without the guard of a verification still in progress
// (Kafka's batchMissingRequiredVerification). p.entry is the producer's
// state before the batch.
func (m *producerStateManager) checkVerification(p *pendingProducer, b *producerBatch, guard VerificationGuard) error {
	if !b.transactional || b.control || p.entry.currentTxnFirstOffset >= 0 {
		return nil
	}
	if v, ok := m.verifications[b.pid]; ok && guard != SentinelGuard && v.guard == guard {
		return nil
	}
	return fmt.Errorf("%w: record from producer %d at offset %d was not part of an ongoing transaction", kerr.InvalidTxnState, b.pid, b.firstOffset)
}

// checkVerificationSequence is the first check of Kafka's
// ProducerAppendInfo.checkSequence: while a verification is in progress, a
// sequence above the lowest one seen waits for the lower one.
func (m *producerStateManager) checkVerificationSequence(b *producerBatch) error {
	v, ok := m.verifications[b.pid]
	if !ok || b.firstSeq <= v.lowestSeq {
		return nil
	}
	return fmt.Errorf("%w: out of order sequence number for producer %d at offset %d: %d (incoming seq. number), %d (earliest seen sequence)",
		kerr.OutOfOrderSequenceNumber, b.pid, b.firstOffset, b.firstSeq, v.lowestSeq)
}

// removeExpiredVerifications forgets verifications older than the producer
// expiration (Kafka removes them with the expired producers).
func (m *producerStateManager) removeExpiredVerifications(nowMs, expirationMs int64) {
	for pid, v := range m.verifications {
		if nowMs-v.createdMs >= expirationMs {
			delete(m.verifications, pid)
		}
	}
}
