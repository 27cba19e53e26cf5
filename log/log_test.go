package log

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAppendReadAcrossRolls(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, nil)
	defer l.Close()

	type appended struct {
		first, last int64
		bytes       []byte
	}
	var all []appended
	ts := clock.Now().UnixMilli()
	for i := 0; i < 300; i++ {
		b := ltBatch(t, ltBatchSpec{n: 1 + i%7, valueSize: 10 + (i*37)%300, ts: ts + int64(i)})
		info := ltAppend(t, l, b)
		want := int64(0)
		if len(all) > 0 {
			want = all[len(all)-1].last + 1
		}
		if info.FirstOffset != want || info.LastOffset != want+int64(1+i%7)-1 {
			t.Fatalf("batch %d: offsets [%d, %d], want first %d", i, info.FirstOffset, info.LastOffset, want)
		}
		all = append(all, appended{info.FirstOffset, info.LastOffset, append([]byte(nil), b...)})
	}
	if l.NumSegments() < 3 {
		t.Fatalf("expected several segments with 16 KiB segments, have %d", l.NumSegments())
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	ltCheckIndexes(t, l)
	// Index files: the active segment's preallocated, the others trimmed.
	for i, s := range l.segs {
		st, _ := os.Stat(s.offIdx.path)
		tst, _ := os.Stat(s.timeIdx.path)
		wantO, wantT := int64(s.offIdx.Entries()*OffsetIndexEntrySize), int64(s.timeIdx.Entries()*TimeIndexEntrySize)
		if i == len(l.segs)-1 {
			wantO, wantT = indexFileSize(ltConfig().SegmentIndexBytes, 8), indexFileSize(ltConfig().SegmentIndexBytes, 12)
		}
		if st.Size() != wantO || tst.Size() != wantT {
			t.Fatalf("segment %d: index files %d/%d bytes, want %d/%d", s.baseOffset, st.Size(), tst.Size(), wantO, wantT)
		}
	}

	// Every offset reads back the batch holding it, byte for byte.
	for _, a := range all {
		for off := a.first; off <= a.last; off++ {
			fd, err := l.Read(off, 1, l.HighWatermark(), true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fd.Records.ReadInto(nil)
			if err != nil {
				t.Fatal(err)
			}
			if fd.FirstBatchOffset != a.first {
				t.Fatalf("read %d: first batch %d, want %d", off, fd.FirstBatchOffset, a.first)
			}
			h, _ := ParseBatchHeader(got)
			if !bytes.Equal(got[LogOverhead+4+1+4:], a.bytes[LogOverhead+4+1+4:]) || h.BaseOffset != a.first {
				t.Fatalf("read %d: bytes differ from what was appended", off)
			}
		}
	}
	// A whole scan returns every batch in order.
	hs := ltReadAll(t, l, 0)
	if len(hs) != len(all) {
		t.Fatalf("scan found %d batches, want %d", len(hs), len(all))
	}
	// maxBytes bounds the result to whole batches.
	fd, err := l.Read(0, 1000, l.HighWatermark(), false)
	if err != nil {
		t.Fatal(err)
	}
	if fd.Records.Size > 1000 || fd.Records.Size == 0 {
		t.Fatalf("read with maxBytes 1000 returned %d bytes", fd.Records.Size)
	}
	b, _ := fd.Records.ReadInto(nil)
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil || h.TotalSize() > len(b) {
			t.Fatalf("partial batch in read result")
		}
		b = b[h.TotalSize():]
	}
}

func TestReadLimits(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	ts := clock.Now().UnixMilli()
	big := ltBatch(t, ltBatchSpec{n: 3, valueSize: 2000, ts: ts}) // offsets 0-2, ~6 KiB
	small := ltBatch(t, ltBatchSpec{n: 2, valueSize: 10, ts: ts}) // offsets 3-4
	ltAppend(t, l, big)
	ltAppend(t, l, small)
	ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 1, valueSize: 10, ts: ts})) // offset 5
	l.UpdateHighWatermark(5)                                             // last batch not yet committed

	tests := []struct {
		name          string
		offset        int64
		maxBytes      int32
		maxOffset     int64
		minOne        bool
		wantFirst     int64
		wantSize      int64
		wantErrOOR    bool
		wantEmptyNoOK bool
	}{
		{"KIP-74 first batch whole", 1, 100, 5, true, 0, int64(len(big)), false, false},
		{"no minOne: nothing fits", 1, 100, 5, false, -1, 0, false, false},
		{"both batches fit", 0, 1 << 20, 5, false, 0, int64(len(big) + len(small)), false, false},
		{"bounded by high watermark", 3, 1 << 20, 5, true, 3, int64(len(small)), false, false},
		{"at high watermark: empty", 5, 1 << 20, 5, true, -1, 0, false, false},
		{"maxOffset mid batch excludes it", 3, 1 << 20, 4, true, -1, 0, false, false},
		{"at log end: empty", 6, 1 << 20, 6, true, -1, 0, false, false},
		{"past log end", 7, 1 << 20, 6, true, -1, 0, true, false},
		{"negative", -1, 1 << 20, 6, true, -1, 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fd, err := l.Read(tt.offset, tt.maxBytes, tt.maxOffset, tt.minOne)
			if tt.wantErrOOR {
				if !errors.Is(err, kerr.OffsetOutOfRange) {
					t.Fatalf("err = %v, want OffsetOutOfRange", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fd.FirstBatchOffset != tt.wantFirst || fd.Records.Size != tt.wantSize {
				t.Fatalf("got first %d size %d, want first %d size %d", fd.FirstBatchOffset, fd.Records.Size, tt.wantFirst, tt.wantSize)
			}
		})
	}
}

func TestFetchOffsetByTimestamp(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	base := clock.Now().UnixMilli() - 100000
	// Batch i holds 4 records at base+i*100 .. +3; batch 7 has the max.
	// Every third batch is compressed.
	for i := 0; i < 40; i++ {
		ts := base + int64(i)*100
		if i == 7 {
			ts = base + 50000
		}
		codec := CodecNone
		if i%3 == 1 {
			codec = CodecLZ4
		}
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 4, valueSize: 200, ts: ts, codec: codec}))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	tests := []struct {
		ts     int64
		want   int64
		wantTs int64
		ok     bool
	}{
		{base, 0, base, true},
		{base + 2, 2, base + 2, true},
		{base + 101, 5, base + 101, true},    // batch 1: lz4
		{base + 402, 18, base + 402, true},   // batch 4: lz4
		{base + 700, 28, base + 50000, true}, // batch 7's records all exceed; first >= is offset 28
		{base + 800, 28, base + 50000, true}, // the first in offset order, as Kafka
		{base + 50001, 29, base + 50001, true},
		{base + 50004, -1, -1, false},
		{LatestTimestamp, 160, -1, true},
		{EarliestTimestamp, 0, -1, true},
		{EarliestLocalTimestamp, 0, -1, true},
		{MaxTimestamp, 31, base + 50003, true},
	}
	for _, tt := range tests {
		got, ok, err := l.FetchOffsetByTimestamp(tt.ts)
		if err != nil {
			t.Fatal(err)
		}
		if ok != tt.ok || (ok && (got.Offset != tt.want || got.Timestamp != tt.wantTs)) {
			t.Errorf("FetchOffsetByTimestamp(%d) = %+v %v, want offset %d ts %d ok %v", tt.ts, got, ok, tt.want, tt.wantTs, tt.ok)
		}
	}
}

func TestIdempotentProducer(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, nil)
	ts := clock.Now().UnixMilli()
	b := func(pid int64, epoch int16, seq int32, n int) []byte {
		return ltBatch(t, ltBatchSpec{n: n, valueSize: 10, ts: ts, pid: pid, epoch: epoch, seq: seq})
	}
	first := ltAppend(t, l, b(7, 0, 0, 3)) // seq 0-2, offsets 0-2
	ltAppend(t, l, b(7, 0, 3, 2))          // seq 3-4, offsets 3-4
	ltAppend(t, l, b(8, 0, 0, 1))          // other producer, offset 5

	tests := []struct {
		name    string
		batch   []byte
		wantErr error
		dup     bool
		first   int64
	}{
		{"retry of first batch", b(7, 0, 0, 3), nil, true, 0},
		{"retry of second batch", b(7, 0, 3, 2), nil, true, 3},
		{"gap", b(7, 0, 9, 1), kerr.OutOfOrderSequenceNumber, false, 0},
		{"old epoch", b(8, -1+0, 1, 1)[:0], nil, false, 0}, // placeholder, replaced below
		{"new epoch not at 0", b(7, 1, 5, 1), kerr.OutOfOrderSequenceNumber, false, 0},
		{"unknown producer, any sequence (KIP-360)", b(9, 0, 42, 1), nil, false, 6},
		{"next in sequence", b(7, 0, 5, 1), nil, false, 7},
		{"new epoch at 0", b(8, 1, 0, 1), nil, false, 8},
		{"older epoch after bump", b(8, 0, 1, 1), kerr.InvalidProducerEpoch, false, 0},
	}
	for _, tt := range tests {
		if len(tt.batch) == 0 {
			continue
		}
		info, err := l.Append(tt.batch, 0)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("%s: err %v, want %v", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if info.Duplicate != tt.dup || info.FirstOffset != tt.first {
			t.Fatalf("%s: got %+v, want dup %v first %d", tt.name, info, tt.dup, tt.first)
		}
	}
	_ = first
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Duplicate detection survives a reload (state rebuilt from headers).
	for _, clean := range []bool{true, false} {
		l2, _ := ltOpen(t, dir, ltConfig(), clock, clean, nil)
		info, err := l2.Append(b(7, 0, 5, 1), 0)
		if err != nil || !info.Duplicate || info.FirstOffset != 7 {
			t.Fatalf("clean=%v: after reload retry got %+v, %v; want duplicate at 7", clean, info, err)
		}
		if _, err := l2.Append(b(7, 0, 8, 1), 0); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
			t.Fatalf("clean=%v: after reload gap: %v", clean, err)
		}
		if l2.LogEndOffset() != leo {
			t.Fatalf("log end moved on duplicate: %d != %d", l2.LogEndOffset(), leo)
		}
		l2.Close()
	}
}

func TestRetention(t *testing.T) {
	ts0 := newLtClock().Now().UnixMilli()
	fill := func(t *testing.T, l *Log, clock *ltClock) {
		for i := 0; i < 100; i++ {
			ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 400, ts: clock.Now().UnixMilli()}))
			clock.Advance(time.Second)
		}
	}
	t.Run("bytes", func(t *testing.T) {
		clock := newLtClock()
		cfg := ltConfig()
		cfg.RetentionBytes = 30 << 10
		cfg.RetentionMs = -1
		l, _ := ltOpen(t, t.TempDir(), cfg, clock, false, nil)
		defer l.Close()
		fill(t, l, clock)
		segsBefore := l.NumSegments()
		// Nothing goes above the high watermark.
		if n, err := l.DeleteOldSegments(); err != nil || n != 0 {
			t.Fatalf("deleted %d (%v) with high watermark 0", n, err)
		}
		l.UpdateHighWatermark(l.LogEndOffset())
		n, err := l.DeleteOldSegments()
		if err != nil || n == 0 {
			t.Fatalf("deleted %d, %v", n, err)
		}
		if l.Size() < cfg.RetentionBytes || l.Size()-l.segs[0].size >= cfg.RetentionBytes {
			t.Fatalf("size %d after retention.bytes %d (first segment %d)", l.Size(), cfg.RetentionBytes, l.segs[0].size)
		}
		if l.NumSegments() != segsBefore-n || l.LogStartOffset() != l.SegmentBaseOffsets()[0] {
			t.Fatalf("log start %d, segments %v", l.LogStartOffset(), l.SegmentBaseOffsets())
		}
		if _, err := l.Read(0, 1000, l.HighWatermark(), true); !errors.Is(err, kerr.OffsetOutOfRange) {
			t.Fatalf("read below log start: %v", err)
		}
		ltReadAll(t, l, l.LogStartOffset())
	})
	t.Run("time", func(t *testing.T) {
		clock := newLtClock()
		cfg := ltConfig()
		cfg.RetentionMs = 30_000
		l, _ := ltOpen(t, t.TempDir(), cfg, clock, false, nil)
		defer l.Close()
		fill(t, l, clock) // timestamps ts0 .. ts0+99s
		l.UpdateHighWatermark(l.LogEndOffset())
		if _, err := l.DeleteOldSegments(); err != nil {
			t.Fatal(err)
		}
		now := clock.Now().UnixMilli()
		for i, s := range l.segs[:len(l.segs)-1] {
			if now-s.largestTimestamp() > cfg.RetentionMs && i == 0 {
				t.Fatalf("expired segment %d kept", s.baseOffset)
			}
		}
		if l.LogStartOffset() == 0 {
			t.Fatal("log start did not move")
		}
		// Everything expires: the active segment is rolled and deleted too.
		clock.Advance(time.Hour)
		if _, err := l.DeleteOldSegments(); err != nil {
			t.Fatal(err)
		}
		if l.NumSegments() != 1 || l.Size() != 0 || l.LogStartOffset() != l.LogEndOffset() {
			t.Fatalf("after all expired: %d segments, size %d, start %d, end %d", l.NumSegments(), l.Size(), l.LogStartOffset(), l.LogEndOffset())
		}
		_ = ts0
		// The log keeps working.
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 1, ts: clock.Now().UnixMilli()}))
	})
	t.Run("compact only keeps segments", func(t *testing.T) {
		clock := newLtClock()
		cfg := ltConfig()
		cfg.RetentionBytes = 1
		cfg.CleanupPolicy = []string{"compact"}
		l, _ := ltOpen(t, t.TempDir(), cfg, clock, false, nil)
		defer l.Close()
		fill(t, l, clock)
		l.UpdateHighWatermark(l.LogEndOffset())
		if n, _ := l.DeleteOldSegments(); n != 0 {
			t.Fatalf("compact policy deleted %d segments", n)
		}
	})
}

func TestDeleteRecordsBefore(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, nil)
	for i := 0; i < 100; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 400, ts: clock.Now().UnixMilli()}))
	}
	l.UpdateHighWatermark(150)
	if _, err := l.DeleteRecordsBefore(151); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("past high watermark: %v", err)
	}
	segs := l.NumSegments()
	start, err := l.DeleteRecordsBefore(101)
	if err != nil || start != 101 || l.LogStartOffset() != 101 {
		t.Fatalf("DeleteRecordsBefore(101) = %d, %v", start, err)
	}
	if l.NumSegments() >= segs {
		t.Fatal("no segment deleted")
	}
	if l.SegmentBaseOffsets()[0] > 101 {
		t.Fatalf("segment holding 101 deleted: %v", l.SegmentBaseOffsets())
	}
	if _, err := l.Read(100, 1000, 150, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	fd, err := l.Read(101, 1000, 150, true)
	if err != nil || fd.FirstBatchOffset != 100 { // the batch holding 101 starts at 100
		t.Fatalf("read at log start: %+v %v", fd, err)
	}
	// Moving backwards is a no-op.
	if start, _ := l.DeleteRecordsBefore(50); start != 101 {
		t.Fatalf("log start went back to %d", start)
	}
	l.Close()
	// The log start survives a reload through the checkpoint value.
	l2, _, err := loadLog(logParams{dir: dir, tp: TopicPartition{"t", 0}, cfg: ltConfig(), logger: ltLogger(t), now: clock.Now,
		hadCleanShutdown: true, recoveryPoint: 200, logStartOffset: 101, highWatermark: 150})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogStartOffset() != 101 || l2.HighWatermark() != 150 || l2.LogEndOffset() != 200 {
		t.Fatalf("after reload: start %d hw %d end %d", l2.LogStartOffset(), l2.HighWatermark(), l2.LogEndOffset())
	}
}

func TestConcurrentAppendRead(t *testing.T) {
	clock := newLtClock()
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, nil)
	defer l.Close()
	const batches = 400
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < batches; i++ {
			b := ltBatch(t, ltBatchSpec{n: 3, valueSize: 100, ts: clock.Now().UnixMilli()})
			if _, err := l.Append(b, 0); err != nil {
				t.Error(err)
				return
			}
			l.UpdateHighWatermark(l.LogEndOffset())
		}
	}()
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := int64(0)
			for next < batches*3 {
				fd, err := l.Read(next, 4096, l.HighWatermark(), true)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := fd.Records.ReadInto(nil)
				if err != nil {
					t.Error(err)
					return
				}
				for len(b) > 0 {
					h, err := ParseBatchHeader(b)
					if err != nil || h.TotalSize() > len(b) {
						t.Errorf("partial batch at %d: %v", next, err)
						return
					}
					if _, err := CheckBatch(b[:h.TotalSize()]); err != nil {
						t.Errorf("reader saw a bad batch: %v", err)
						return
					}
					if h.BaseOffset != next {
						t.Errorf("batch at %d, want %d", h.BaseOffset, next)
						return
					}
					next = h.NextOffset()
					b = b[h.TotalSize():]
				}
				_, _, _ = l.FetchOffsetByTimestamp(clock.Now().UnixMilli())
			}
		}()
	}
	wg.Add(1)
	go func() { // retention and flush racing with both
		defer wg.Done()
		for i := 0; i < 50; i++ {
			_ = l.Flush()
			_, _ = l.DeleteOldSegments()
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
}

func TestFaultFSWriteFailure(t *testing.T) {
	for _, short := range []bool{false, true} {
		clock := newLtClock()
		dir := t.TempDir()
		ffs := NewFaultFS(nil)
		l, _ := ltOpen(t, dir, ltConfig(), clock, false, ffs)
		ts := clock.Now().UnixMilli()
		for i := 0; i < 5; i++ {
			ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 100, ts: ts}))
		}
		ffs.Inject(Fault{Op: OpWrite, PathContains: LogFileSuffix, Short: short})
		if _, err := l.Append(ltBatch(t, ltBatchSpec{n: 2, valueSize: 100, ts: ts}), 0); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("short=%v: failed write gave %v", short, err)
		}
		if l.LogEndOffset() != 10 {
			t.Fatalf("log end moved to %d on a failed write", l.LogEndOffset())
		}
		info := ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 100, ts: ts}))
		if info.FirstOffset != 10 {
			t.Fatalf("next append at %d", info.FirstOffset)
		}
		if hs := ltReadAll(t, l, 0); len(hs) != 6 {
			t.Fatalf("%d batches after failed write", len(hs))
		}
		// A failed fsync surfaces from Flush and keeps the recovery point.
		ffs.Inject(Fault{Op: OpSync})
		if err := l.Flush(); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("failed sync gave %v", err)
		}
		if l.RecoveryPoint() != 0 {
			t.Fatalf("recovery point moved on failed flush: %d", l.RecoveryPoint())
		}
		l.Close()
		l2, res := ltOpen(t, dir, ltConfig(), clock, false, nil)
		if l2.LogEndOffset() != 12 || res.TruncatedBytes != 0 {
			t.Fatalf("short=%v: reload: end %d, truncated %d", short, l2.LogEndOffset(), res.TruncatedBytes)
		}
		l2.Close()
	}
}

func TestFaultFSCrashDropsUnsynced(t *testing.T) {
	clock := newLtClock()
	dir := t.TempDir()
	ffs := NewFaultFS(nil)
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, ffs)
	ts := clock.Now().UnixMilli()
	for i := 0; i < 60; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 300, ts: ts}))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	synced := l.LogEndOffset()
	for i := 0; i < 30; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 300, ts: ts}))
	}
	if err := ffs.Crash(); err != nil {
		t.Fatal(err)
	}
	// The process dies: no Close. Reload from what survived.
	l2, res := ltOpen(t, dir, ltConfig(), clock, false, nil)
	defer l2.Close()
	if l2.LogEndOffset() < synced {
		t.Fatalf("lost synced data: end %d < %d", l2.LogEndOffset(), synced)
	}
	hs := ltReadAll(t, l2, 0)
	if int64(len(hs))*2 != l2.LogEndOffset() {
		t.Fatalf("%d batches for log end %d", len(hs), l2.LogEndOffset())
	}
	ltCheckIndexes(t, l2)
	t.Logf("synced %d, recovered end %d, recovered segments %d", synced, l2.LogEndOffset(), res.RecoveredSegments)
	l.Close()
}
