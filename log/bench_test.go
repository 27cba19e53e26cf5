package log

import (
	"testing"
)

// BenchmarkAppend appends 16 KiB batches of 1 KiB records (uncompressed).
// The same buffer is re-appended with its base offset reset to 0 (the
// validator patches offsets in place, as Kafka does).
func BenchmarkAppend(b *testing.B) {
	clock := newLtClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 256 << 20
	l, _ := ltOpen(b, b.TempDir(), cfg, clock, false, nil)
	defer l.Close()
	batch := ltBatch(b, ltBatchSpec{n: 16, valueSize: 1000, ts: clock.Now().UnixMilli()})
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		SetBaseOffset(batch, 0)
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndexLookup looks up offsets in a full 10 MiB offset index.
func BenchmarkIndexLookup(b *testing.B) {
	ix := newOffsetIndex(0, 10<<20)
	for i := 1; !ix.IsFull(); i++ {
		if err := ix.Append(int64(i*16), int32(i*64)); err != nil {
			b.Fatal(err)
		}
	}
	n := int64(ix.Entries() * 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = ix.Lookup(int64(i*7919) % n)
	}
}

// BenchmarkRead reads 1 MiB fetches at random positions of a 64 MiB log
// (finding the position and scanning headers, then pread of the data).
func BenchmarkRead(b *testing.B) {
	clock := newLtClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 16 << 20
	l, _ := ltOpen(b, b.TempDir(), cfg, clock, false, nil)
	defer l.Close()
	batch := ltBatch(b, ltBatchSpec{n: 16, valueSize: 1000, ts: clock.Now().UnixMilli()})
	for l.Size() < 64<<20 {
		SetBaseOffset(batch, 0)
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	hw := l.UpdateHighWatermark(l.LogEndOffset())
	buf := make([]byte, 0, 2<<20)
	b.Run("locate", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := l.Read(int64(i*7919)%hw, 1<<20, hw, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("locate+pread", func(b *testing.B) {
		b.SetBytes(1 << 20)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			fd, err := l.Read(int64(i*7919)%hw, 1<<20, hw, true)
			if err != nil {
				b.Fatal(err)
			}
			if buf, err = fd.Records.ReadInto(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
