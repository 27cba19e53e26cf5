package log

import (
	"errors"
	"fmt"
	"testing"
)

// txnBatch builds a producer's batch of n records: transactional or only
// idempotent, at base offset 0, as a producer sends it.
func txnBatch(tb testing.TB, ts int64, pid int64, epoch int16, seq int32, n int, transactional bool) []byte {
	tb.Helper()
	b := NewBatchBuilder(0)
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, epoch, seq, transactional
	for i := 0; i < n; i++ {
		b.Add(ts+int64(i), fmt.Appendf(nil, "k%d", i), fmt.Appendf(nil, "p%d-s%d", pid, int(seq)+i))
	}
	out, err := b.Build(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// producerCursor produces a producer's batches with growing sequences.
type producerCursor struct {
	pid   int64
	epoch int16
	seq   int32
}

// send appends n records (transactional or not) and returns the append.
func (p *producerCursor) send(tb testing.TB, l *Log, ts int64, n int, transactional bool) AppendInfo {
	tb.Helper()
	info, err := l.Append(txnBatch(tb, ts, p.pid, p.epoch, p.seq, n, transactional), 0)
	if err != nil {
		tb.Fatalf("producer %d append: %v", p.pid, err)
	}
	p.seq += int32(n)
	return info
}

// marker appends a COMMIT or ABORT marker as the transaction coordinator
// does (AppendOriginCoordinator) and fails the test on error.
func marker(tb testing.TB, l *Log, ts int64, pid int64, epoch int16, typ int16, coordEpoch int32) AppendInfo {
	tb.Helper()
	info, err := appendMarker(l, ts, pid, epoch, typ, coordEpoch, 0)
	if err != nil {
		tb.Fatalf("marker for producer %d: %v", pid, err)
	}
	return info
}

func appendMarker(l *Log, ts int64, pid int64, epoch int16, typ int16, coordEpoch int32, tv int16) (AppendInfo, error) {
	return l.AppendAsLeader(BuildControlBatch(0, ts, pid, epoch, -1, typ, coordEpoch), 0,
		AppendOptions{Origin: AppendOriginCoordinator, TransactionVersion: tv})
}

// hwToEnd moves the high watermark to the log end (one node).
func hwToEnd(l *Log) { l.UpdateHighWatermark(l.LogEndOffset()) }

// allAborted lists every aborted transaction in the log's indexes.
func allAborted(tb testing.TB, l *Log) []AbortedTxn {
	tb.Helper()
	got, err := l.AbortedTransactions(0, 1<<62)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

func wantErrIs(tb testing.TB, what string, err, want error) {
	tb.Helper()
	if want == nil {
		if err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		tb.Fatalf("%s: err %v, want %v", what, err, want)
	}
}
