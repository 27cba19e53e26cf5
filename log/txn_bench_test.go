package log

import (
	"fmt"
	"testing"
)

// BenchmarkAppendIdempotentVsTransactional appends 1 KiB records in
// batches of 10, idempotent, or in transactions of 100 records (10
// batches and a COMMIT marker), as the throughput bar compares
// them (transactional at least half of idempotent).
func BenchmarkAppendIdempotentVsTransactional(b *testing.B) {
	for _, txn := range []bool{false, true} {
		b.Run(map[bool]string{false: "idempotent", true: "transactional"}[txn], func(b *testing.B) {
			clock := newLtClock()
			cfg := DefaultConfig()
			l, _ := ltOpen(b, b.TempDir(), cfg, clock, false, nil)
			defer l.Close()
			ts := clock.Now().UnixMilli()
			batches := make([][]byte, 10)
			var seq int32
			b.SetBytes(10 * 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := i % 10
				if j == 0 {
					b.StopTimer()
					for k := range batches {
						batches[k] = benchBatch(b, ts, 1, 0, seq+int32(k*10), txn)
					}
					seq += 100
					b.StartTimer()
				}
				if _, err := l.Append(batches[j], 0); err != nil {
					b.Fatal(err)
				}
				if txn && j == 9 {
					if _, err := appendMarker(l, ts, 1, 0, ControlCommit, 0, 0); err != nil {
						b.Fatal(err)
					}
				}
				if j == 9 {
					l.UpdateHighWatermark(l.LogEndOffset())
				}
			}
		})
	}
}

func benchBatch(b *testing.B, ts, pid int64, epoch int16, seq int32, txn bool) []byte {
	bb := NewBatchBuilder(0)
	bb.ProducerID, bb.ProducerEpoch, bb.BaseSequence, bb.Transactional = pid, epoch, seq, txn
	v := make([]byte, 1024)
	for i := 0; i < 10; i++ {
		bb.Add(ts, nil, v)
	}
	out, err := bb.Build(nil)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkLoadProducerState loads a log of 1,000 producers' transactions
// (about 5 MiB, several segments): after a clean shutdown (the snapshot
// at the log end, nothing replayed) and after a crash (every segment
// recovered and replayed).
func BenchmarkLoadProducerState(b *testing.B) {
	clock := newLtClock()
	dir := b.TempDir()
	cfg := ltConfig()
	cfg.SegmentBytes = 1 << 20
	l, _ := ltOpen(b, dir, cfg, clock, false, nil)
	ts := clock.Now().UnixMilli()
	for r := 0; r < 5; r++ {
		for pid := int64(0); pid < 1000; pid++ {
			if _, err := l.Append(txnBatch(b, ts, pid, 0, int32(r*5), 5, true), 0); err != nil {
				b.Fatal(err)
			}
			typ := ControlCommit
			if pid%3 == 0 {
				typ = ControlAbort
			}
			if _, err := appendMarker(l, ts, pid, 0, typ, 0, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		b.Run(fmt.Sprintf("clean=%v", clean), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				l2, res := ltOpen(b, dir, cfg, clock, clean, nil)
				if clean && res.ReplayedBatches != 0 || !clean && res.ReplayedBatches == 0 {
					b.Fatalf("replayed %d", res.ReplayedBatches)
				}
				b.ReportMetric(float64(res.ReplayedBatches), "batches-replayed")
				l2.mu.Lock()
				l2.closed = true // no snapshot: the next load is the same
				l2.mu.Unlock()
				for _, s := range l2.segs {
					s.closeFiles()
				}
			}
		})
	}
}
