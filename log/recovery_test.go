package log

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestRecoveryTornTail cuts the active segment at every byte of its last
// batch and checks recovery keeps exactly the complete batches, with
// indexes that agree with the data.
func TestRecoveryTornTail(t *testing.T) {
	clock := newLtClock()
	src := t.TempDir()
	cfg := ltConfig()
	cfg.IndexIntervalBytes = 100
	l, _ := ltOpen(t, src, cfg, clock, false, nil)
	var ends []int64 // byte position after each batch of the active segment
	for i := 0; i < 12; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 1 + i%3, valueSize: 40 + i*7, ts: clock.Now().UnixMilli() + int64(i)}))
		ends = append(ends, l.active().size)
	}
	if l.NumSegments() != 1 {
		t.Fatalf("want one segment, have %d", l.NumSegments())
	}
	leo := l.LogEndOffset()
	lastStart := ends[len(ends)-2]
	full := ends[len(ends)-1]
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logName := FilenamePrefixFromOffset(0) + LogFileSuffix
	data, err := os.ReadFile(filepath.Join(src, logName))
	if err != nil {
		t.Fatal(err)
	}
	for cut := lastStart; cut <= full; cut++ {
		dir := filepath.Join(t.TempDir(), "t-0")
		ltCopyDir(t, src, dir)
		if err := os.WriteFile(filepath.Join(dir, logName), data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		l2, res := ltOpen(t, dir, cfg, clock, false, nil)
		wantEnd, wantSize := leo, full
		if cut < full {
			wantEnd = leo - int64(1+11%3)
			wantSize = lastStart
		}
		if l2.LogEndOffset() != wantEnd || l2.Size() != wantSize {
			t.Fatalf("cut %d: end %d size %d, want end %d size %d", cut, l2.LogEndOffset(), l2.Size(), wantEnd, wantSize)
		}
		if res.TruncatedBytes != cut-wantSize {
			t.Fatalf("cut %d: truncated %d bytes, want %d", cut, res.TruncatedBytes, cut-wantSize)
		}
		if st, _ := os.Stat(filepath.Join(dir, logName)); st.Size() != wantSize {
			t.Fatalf("cut %d: file is %d bytes after recovery", cut, st.Size())
		}
		ltCheckIndexes(t, l2)
		if hs := ltReadAll(t, l2, 0); len(hs) != 11+int(min(1, cut/full)) {
			t.Fatalf("cut %d: %d batches", cut, len(hs))
		}
		// The log takes appends at the recovered end.
		if info := ltAppend(t, l2, ltBatch(t, ltBatchSpec{ts: clock.Now().UnixMilli()})); info.FirstOffset != wantEnd {
			t.Fatalf("cut %d: next append at %d", cut, info.FirstOffset)
		}
		l2.Close()
	}
}

// TestRecoveryCorruptBatch corrupts one byte in the middle of the tail:
// the batch and everything after it, later segments too, are dropped.
func TestRecoveryCorruptBatch(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	cfg := ltConfig()
	l, _ := ltOpen(t, dir, cfg, clock, false, nil)
	type pos struct {
		seg   int64
		start int64
		first int64
	}
	var batches []pos
	for i := 0; i < 120; i++ {
		seg := l.active().baseOffset
		start := l.active().size
		info := ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 300, ts: clock.Now().UnixMilli()}))
		if l.active().baseOffset != seg {
			seg, start = l.active().baseOffset, 0
		}
		batches = append(batches, pos{seg, start, info.FirstOffset})
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() < 3 {
		t.Fatalf("want 3+ segments, have %d", l.NumSegments())
	}
	l.Close()
	// Corrupt a record byte of batch 40 (in the first or second segment).
	victim := batches[40]
	path := filepath.Join(dir, FilenamePrefixFromOffset(victim.seg)+LogFileSuffix)
	data, _ := os.ReadFile(path)
	data[victim.start+BatchHeaderSize+20] ^= 0xff
	os.WriteFile(path, data, 0o644)

	// With the recovery point below the corruption, recovery drops it.
	l2, res, err := loadLog(logParams{dir: dir, tp: TopicPartition{"t", 0}, cfg: cfg, logger: ltLogger(t), now: clock.Now,
		recoveryPoint: victim.seg, logStartOffset: -1, highWatermark: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() != victim.first {
		t.Fatalf("end %d, want %d (start of the corrupt batch)", l2.LogEndOffset(), victim.first)
	}
	if res.DeletedSegments == 0 || l2.active().baseOffset != victim.seg {
		t.Fatalf("later segments kept: %v (deleted %d)", l2.SegmentBaseOffsets(), res.DeletedSegments)
	}
	ltCheckIndexes(t, l2)
	if hs := ltReadAll(t, l2, 0); len(hs) != 40 {
		t.Fatalf("%d batches survive, want 40", len(hs))
	}
	if info := ltAppend(t, l2, ltBatch(t, ltBatchSpec{ts: clock.Now().UnixMilli()})); info.FirstOffset != victim.first {
		t.Fatalf("append after recovery at %d", info.FirstOffset)
	}
}

// TestCorruptIndexRebuilt: an index whose size is not a multiple of the
// entry size, or whose entries go backwards, or a missing one, is rebuilt
// even after a clean shutdown.
func TestCorruptIndexRebuilt(t *testing.T) {
	clock := newLtClock()
	cfg := ltConfig()
	damage := map[string]func(path string){
		"odd size": func(p string) {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-3], 0o644)
		},
		"backwards": func(p string) {
			b, _ := os.ReadFile(p)
			copy(b[8:16], bytes.Repeat([]byte{0}, 3)) // second entry rel offset below first
			b[11] = 1
			os.WriteFile(p, b, 0o644)
		},
		"missing":   func(p string) { os.Remove(p) },
		"past data": func(p string) { b, _ := os.ReadFile(p); b[len(b)-4] = 0x7f; os.WriteFile(p, b, 0o644) },
		"time broken": func(p string) {
			os.WriteFile(p[:len(p)-len(IndexFileSuffix)]+TimeIndexFileSuffix, []byte{1, 2, 3}, 0o644)
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := ltOpen(t, dir, cfg, clock, false, nil)
			for i := 0; i < 100; i++ {
				ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 300, ts: clock.Now().UnixMilli()}))
			}
			leo := l.LogEndOffset()
			l.Close()
			fn(filepath.Join(dir, FilenamePrefixFromOffset(0)+IndexFileSuffix))
			l2, res := ltOpen(t, dir, cfg, clock, true, nil)
			defer l2.Close()
			if res.RecoveredSegments != 1 || l2.LogEndOffset() != leo {
				t.Fatalf("recovered %d segments, end %d (want 1, %d)", res.RecoveredSegments, l2.LogEndOffset(), leo)
			}
			ltCheckIndexes(t, l2)
			ltReadAll(t, l2, 0)
		})
	}
}
