package log

import (
	"io"
	"log/slog"
	"testing"
)

// BenchmarkAppendInManager is BenchmarkAppend on a log of a Manager, whose
// I/O goes through the FS that reports errors to the log dir's failure
// handling: compare the two for that FS's cost on the append path.
func BenchmarkAppendInManager(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 256 << 20
	m, err := NewManager(ManagerConfig{Dirs: []string{b.TempDir()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreateLog(TopicPartition{Topic: "t", Partition: 0}, [16]byte{1}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	batch := ltBatch(b, ltBatchSpec{n: 16, valueSize: 1000, ts: newLtClock().Now().UnixMilli()})
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

// BenchmarkScrub is one unthrottled scrubber pass over a 64 MiB log of
// 16 KiB batches in 16 MiB segments (from the page cache): what checking
// costs per byte, which the throttle then spreads out.
func BenchmarkScrub(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 16 << 20
	m, err := NewManager(ManagerConfig{Dirs: []string{b.TempDir()}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Scrub: ScrubConfig{BytesPerSecond: 1 << 40}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreateLog(TopicPartition{Topic: "t", Partition: 0}, [16]byte{1}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	batch := ltBatch(b, ltBatchSpec{n: 16, valueSize: 1000, ts: newLtClock().Now().UnixMilli()})
	for l.Size() < 64<<20 {
		SetBaseOffset(batch, 0)
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	var closed int64
	for _, s := range l.segs[:len(l.segs)-1] {
		closed += s.size
	}
	b.SetBytes(closed)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !m.scrubber.pass(make(chan struct{})) {
			b.Fatal("pass stopped")
		}
	}
}
