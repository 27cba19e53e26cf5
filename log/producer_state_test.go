package log

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestProducerStateErrors runs Kafka's producer-state checks in order on
// one log: each step appends a batch (client) or a marker (coordinator)
// and expects Kafka's answer. Kafka's broker never answers
// UNKNOWN_PRODUCER_ID (an unknown producer may start at any sequence,
// KIP-360) nor DUPLICATE_SEQUENCE_NUMBER (a retry of one of the last five
// batches gets the original offsets), and gives INVALID_PRODUCER_EPOCH
// where PRODUCER_FENCED was once used (KAFKA-9803).
func TestProducerStateErrors(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	ts := clock.Now().UnixMilli()
	data := func(pid int64, epoch int16, seq int32, n int, txn bool) func() (AppendInfo, error) {
		return func() (AppendInfo, error) { return l.Append(txnBatch(t, ts, pid, epoch, seq, n, txn), 0) }
	}
	mark := func(pid int64, epoch int16, typ int16, coordEpoch int32, tv int16) func() (AppendInfo, error) {
		return func() (AppendInfo, error) { return appendMarker(l, ts, pid, epoch, typ, coordEpoch, tv) }
	}
	steps := []struct {
		name    string
		do      func() (AppendInfo, error)
		wantErr error
		dup     bool
		first   int64 // expected first offset when no error
	}{
		{"idempotent first batch", data(1, 0, 0, 3, false), nil, false, 0},
		{"next in sequence", data(1, 0, 3, 2, false), nil, false, 3},
		{"retry of the first batch: original offsets", data(1, 0, 0, 3, false), nil, true, 0},
		{"retry of the second batch", data(1, 0, 3, 2, false), nil, true, 3},
		{"gap", data(1, 0, 9, 1, false), kerr.OutOfOrderSequenceNumber, false, 0},
		{"overlapping range, not a retry", data(1, 0, 2, 2, false), kerr.OutOfOrderSequenceNumber, false, 0},
		{"new epoch not at sequence 0", data(1, 1, 5, 1, false), kerr.OutOfOrderSequenceNumber, false, 0},
		{"unknown producer at any sequence (KIP-360)", data(2, 0, 42, 1, false), nil, false, 5},
		{"new epoch at 0", data(1, 1, 0, 1, false), nil, false, 6},
		{"older epoch", data(1, 0, 5, 1, false), kerr.InvalidProducerEpoch, false, 0},
		{"retry with an older epoch is not a duplicate", data(1, 0, 3, 2, false), kerr.InvalidProducerEpoch, false, 0},

		{"transactional producer starts a transaction", data(3, 0, 0, 2, true), nil, false, 7},
		{"and continues it", data(3, 0, 2, 1, true), nil, false, 9},
		{"non-transactional batch inside its transaction", data(3, 0, 3, 1, false), kerr.InvalidTxnState, false, 0},

		{"client control batch", func() (AppendInfo, error) {
			return l.Append(BuildControlBatch(0, ts, 3, 0, -1, ControlCommit, 0), 0)
		}, kerr.InvalidRecord, false, 0},
		{"COMMIT from coordinator epoch 5", mark(3, 0, ControlCommit, 5, 0), nil, false, 10},
		{"next transaction", data(3, 0, 3, 1, true), nil, false, 11},
		{"marker from an older coordinator epoch", mark(3, 0, ControlAbort, 4, 0), kerr.TransactionCoordinatorFenced, false, 0},
		{"marker with an older producer epoch", mark(1, 0, ControlAbort, 5, 0), kerr.InvalidProducerEpoch, false, 0},
		{"TV2 marker at the producer's own epoch", mark(3, 0, ControlAbort, 5, 2), kerr.InvalidProducerEpoch, false, 0},
		{"TV2 marker with the bumped epoch", mark(3, 1, ControlAbort, 5, 2), nil, false, 12},
		{"old epoch after the TV2 bump", data(3, 0, 4, 1, true), kerr.InvalidProducerEpoch, false, 0},
		{"marker for a producer without a transaction: accepted, completes nothing", mark(2, 0, ControlCommit, 0, 0), nil, false, 13},
		{"bumped epoch starts at sequence 0", data(3, 1, 0, 1, true), nil, false, 14},
	}
	for _, s := range steps {
		info, err := s.do()
		if s.wantErr != nil {
			wantErrIs(t, s.name, err, s.wantErr)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if info.Duplicate != s.dup || info.FirstOffset != s.first {
			t.Fatalf("%s: got first %d dup %v, want first %d dup %v", s.name, info.FirstOffset, info.Duplicate, s.first, s.dup)
		}
		hwToEnd(l)
	}
	// Producer 3's transaction at 11 was aborted by the TV2 marker; its
	// new one starts at 14.
	if got := allAborted(t, l); len(got) != 1 || got[0] != (AbortedTxn{ProducerID: 3, FirstOffset: 11, LastOffset: 12, LastStableOffset: 13}) {
		t.Fatalf("aborted %+v", got)
	}
	if got := l.LastStableOffset(); got != 14 {
		t.Fatalf("LSO %d, want 14 (producer 3's open transaction)", got)
	}
	ps := l.ActiveProducers()
	want := []ProducerState{
		{ProducerID: 1, ProducerEpoch: 1, LastSequence: 0, LastTimestamp: ts, CoordinatorEpoch: -1, CurrentTxnStartOffset: -1},
		{ProducerID: 2, ProducerEpoch: 0, LastSequence: 42, LastTimestamp: ts, CoordinatorEpoch: 0, CurrentTxnStartOffset: -1},
		{ProducerID: 3, ProducerEpoch: 1, LastSequence: 0, LastTimestamp: ts, CoordinatorEpoch: 5, CurrentTxnStartOffset: 14},
	}
	if len(ps) != len(want) {
		t.Fatalf("producers %+v", ps)
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Fatalf("producer %d: %+v, want %+v", i, ps[i], want[i])
		}
	}
}

// TestProducerEntrySequenceAfterMarkerOnly: a producer whose only state is
// a marker (no batch remembered) must start its epoch's batches at 0, as
// in Kafka (the current last sequence is NO_SEQUENCE).
func TestProducerEntrySequenceAfterMarkerOnly(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	ts := clock.Now().UnixMilli()
	marker(t, l, ts, 9, 2, ControlAbort, 0)
	_, err := l.Append(txnBatch(t, ts, 9, 2, 7, 1, true), 0)
	wantErrIs(t, "sequence 7 after a marker only", err, kerr.OutOfOrderSequenceNumber)
	if _, err := l.Append(txnBatch(t, ts, 9, 2, 0, 1, true), 0); err != nil {
		t.Fatalf("sequence 0: %v", err)
	}
}

func TestProducerExpiration(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	exp := int64(60_000)
	l, _ := ltOpenExp(t, dir, clock, exp, false)
	ts := clock.Now().UnixMilli()
	idem := &producerCursor{pid: 1}
	txn := &producerCursor{pid: 2}
	idem.send(t, l, ts, 1, false)
	txn.send(t, l, ts, 1, true)
	clock.Advance(59 * time.Second)
	if n := l.RemoveExpiredProducers(); n != 0 {
		t.Fatalf("expired %d before producer.id.expiration.ms", n)
	}
	clock.Advance(time.Second)
	if n := l.RemoveExpiredProducers(); n != 1 {
		t.Fatalf("expired %d, want 1 (the one without an open transaction)", n)
	}
	if ps := l.ActiveProducers(); len(ps) != 1 || ps[0].ProducerID != 2 {
		t.Fatalf("left %+v", ps)
	}
	// The expired producer may continue at any sequence.
	if _, err := l.Append(txnBatch(t, clock.Now().UnixMilli(), 1, 0, 77, 1, false), 0); err != nil {
		t.Fatal(err)
	}
	marker(t, l, clock.Now().UnixMilli()-2*exp, 2, 0, ControlCommit, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Loading skips entries already expired: producer 2's last write is
	// its marker, stamped long ago.
	l2, res := ltOpenExp(t, dir, clock, exp, true)
	defer l2.Close()
	if res.ProducerSnapshotOffset != l2.LogEndOffset() || res.ReplayedBatches != 0 {
		t.Fatalf("loaded from snapshot %d with %d batches replayed; want the one at the log end %d", res.ProducerSnapshotOffset, res.ReplayedBatches, l2.LogEndOffset())
	}
	if ps := l2.ActiveProducers(); len(ps) != 1 || ps[0].ProducerID != 1 {
		t.Fatalf("after load %+v", ps)
	}
}

func ltOpenExp(tb testing.TB, dir string, clock *ltClock, expMs int64, clean bool) (*Log, LoadResult) {
	tb.Helper()
	l, res, err := loadLog(logParams{
		dir: dir, tp: TopicPartition{"t", 0}, cfg: ltConfig(), fsys: OSFS{}, logger: ltLogger(tb), now: clock.Now,
		hadCleanShutdown: clean,
		logStartOffset:   -1, highWatermark: -1, pidExpirationMs: func() int64 { return expMs },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return l, res
}
