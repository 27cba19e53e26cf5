package log

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// verifiedAppend appends a transactional batch as a verified Produce
// does: with the guard its verification got.
func verifiedAppend(l *Log, b []byte, guard VerificationGuard) (AppendInfo, error) {
	return l.AppendAsLeader(b, 0, AppendOptions{Origin: AppendOriginClient, VerifyTransaction: true, VerificationGuard: guard})
}

// TestVerificationGuardStopsAHangingTransaction is Kafka's ABA case: a
// produce is verified, the transaction is aborted (its marker written)
// before the produce is appended, and the producer starts a new
// transaction. The late append must not open a transaction the
// coordinator does not know of.
func TestVerificationGuardStopsAHangingTransaction(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	ts := clock.Now().UnixMilli()
	const pid = 7

	stale := l.MaybeStartTransactionVerification(pid, 0, 0)
	if stale == SentinelGuard {
		t.Fatal("no transaction is open, yet no verification is needed")
	}
	if again := l.MaybeStartTransactionVerification(pid, 0, 0); again != stale {
		t.Fatalf("a second verification of the same transaction got guard %d, want %d", again, stale)
	}
	// The coordinator aborts (a timeout): the marker retires the guard.
	marker(t, l, ts, pid, 0, ControlAbort, 0)
	_, err := verifiedAppend(l, txnBatch(t, ts, pid, 0, 0, 1, true), stale)
	wantErrIs(t, "append with the guard of an ended transaction", err, kerr.InvalidTxnState)
	if got := l.LogEndOffset(); got != 1 {
		t.Fatalf("log end %d after the refused append, want 1 (the marker)", got)
	}

	// The producer's retry is verified afresh and goes in.
	fresh := l.MaybeStartTransactionVerification(pid, 0, 0)
	if fresh == SentinelGuard || fresh == stale {
		t.Fatalf("fresh guard %d (stale %d)", fresh, stale)
	}
	if _, err := verifiedAppend(l, txnBatch(t, ts, pid, 0, 0, 1, true), fresh); err != nil {
		t.Fatal(err)
	}
	// The transaction is open now: no verification, no guard needed.
	if g := l.MaybeStartTransactionVerification(pid, 1, 0); g != SentinelGuard {
		t.Fatalf("guard %d for an open transaction, want the sentinel", g)
	}
	if _, err := verifiedAppend(l, txnBatch(t, ts, pid, 0, 1, 1, true), SentinelGuard); err != nil {
		t.Fatal(err)
	}
	// It is committed; a batch verified while it was open (the sentinel)
	// arriving after the marker must not open another.
	marker(t, l, ts, pid, 0, ControlCommit, 0)
	_, err = verifiedAppend(l, txnBatch(t, ts, pid, 0, 2, 1, true), SentinelGuard)
	wantErrIs(t, "append verified as open after the transaction ended", err, kerr.InvalidTxnState)
	if l.pstate.firstUndecidedOffset() != -1 {
		t.Fatalf("a transaction is left open from offset %d", l.pstate.firstUndecidedOffset())
	}
	// Without verification (transaction.partition.verification.enable
	// off, Produce before v12) the append is not checked.
	if _, err := l.Append(txnBatch(t, ts, pid, 0, 2, 1, true), 0); err != nil {
		t.Fatal(err)
	}
}

// TestVerificationLowestSequence: while a verification is in progress, a
// higher sequence of the producer waits for the lowest one seen (Kafka's
// VerificationStateEntry.lowestSequence), and an abandoned verification
// starts afresh.
func TestVerificationLowestSequence(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	ts := clock.Now().UnixMilli()
	const pid = 9

	g := l.MaybeStartTransactionVerification(pid, 5, 0)
	if g2 := l.MaybeStartTransactionVerification(pid, 0, 0); g2 != g {
		t.Fatalf("guard changed: %d, %d", g, g2)
	}
	_, err := verifiedAppend(l, txnBatch(t, ts, pid, 0, 5, 1, true), g)
	wantErrIs(t, "sequence 5 while 0 is being verified", err, kerr.OutOfOrderSequenceNumber)
	if _, err := verifiedAppend(l, txnBatch(t, ts, pid, 0, 0, 5, true), g); err != nil {
		t.Fatal(err)
	}
	if _, err := verifiedAppend(l, txnBatch(t, ts, pid, 0, 5, 1, true), SentinelGuard); err != nil {
		t.Fatalf("sequence 5 once the transaction is open: %v", err)
	}

	const other = 10
	h := l.MaybeStartTransactionVerification(other, 0, 0)
	l.AbandonTransactionVerification(other, h+1) // not its guard: kept
	if got := l.MaybeStartTransactionVerification(other, 0, 0); got != h {
		t.Fatalf("guard %d after abandoning another guard, want %d", got, h)
	}
	l.AbandonTransactionVerification(other, h)
	if got := l.MaybeStartTransactionVerification(other, 0, 0); got == h || got == SentinelGuard {
		t.Fatalf("guard %d after abandoning %d", got, h)
	}
	// Verifications nobody completes go with the producer expiration.
	clock.Advance(25 * time.Hour)
	l.RemoveExpiredProducers()
	if n := len(l.pstate.verifications); n != 0 {
		t.Fatalf("%d verifications left after expiration", n)
	}
}
