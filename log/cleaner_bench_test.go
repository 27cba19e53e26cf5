package log

import (
	"crypto/rand"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchCleanerLog writes size bytes of 1 KiB records (16 a batch) whose
// keys come from size/1KiB/10 keys (10% unique), rolls, and returns the
// log, ready to clean, with a cleaner with Kafka's defaults over it.
func benchCleanerLog(b *testing.B, size int64) (*Log, *LogCleaner) {
	b.Helper()
	clock := newLtClock()
	dir := filepath.Join(b.TempDir(), "bench-0")
	cfg := DefaultConfig()
	cfg.CleanupPolicy = []string{"compact"}
	cfg.SegmentBytes = 128 << 20
	cfg.FileDeleteDelayMs = 0
	l, _ := ltOpen(b, dir, cfg, clock, false, nil)
	records := size / 1024
	keys := records / 10
	value := make([]byte, 1000)
	rand.Read(value)
	bb := NewBatchBuilder(0)
	var n int64
	for n < records {
		bb.Reset(0)
		for i := 0; i < 16; i++ {
			k := fmt.Sprintf("key-%09d", (n*7919)%keys)
			value[0], value[1] = byte(n), byte(n>>8)
			bb.Add(clock.Now().UnixMilli(), []byte(k), value)
			n++
		}
		batch, err := bb.Build(nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		b.Fatal(err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	lc, err := newLogCleaner(DefaultCleanerConfig(), []string{filepath.Dir(dir)}, OSFS{}, ctLogger(), clock.Now, func() []*Log { return []*Log{l} })
	if err != nil {
		b.Fatal(err)
	}
	return l, lc
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCleaner is issue 9's benchmark: cleaning 1 GiB of 1 KiB
// records with 10% unique keys, with Kafka's cleaner defaults (one thread,
// 128 MiB dedupe buffer, 512 KiB I/O buffers, no throttle), from the page
// cache. It reports the process CPU time per GiB of log (cpu-s/GiB: the
// pass reads the dirty log twice, once to map it and once to copy it) and
// the wall time; then the throughput of appends of 16 KiB batches to
// another log without cleaning (the mean of before and after) and during
// a second, identical cleaning, and how much it drops (produce-drop-%).
//
//	go test ./log -run '^$' -bench BenchmarkCleaner -benchtime=1x
func BenchmarkCleaner(b *testing.B) {
	const size = 1 << 30
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l, lc := benchCleanerLog(b, size)
		gib := float64(l.Size()) / (1 << 30)
		b.StartTimer()
		cpu0, wall0 := cpuTime(), time.Now()
		if !lc.threads[0].tryCleanFilthiestLog() {
			b.Fatal("nothing cleaned")
		}
		cpu, wall := cpuTime()-cpu0, time.Since(wall0)
		b.StopTimer()
		stats, _ := lc.threads[0].stats()
		b.ReportMetric(cpu.Seconds()/gib, "cpu-s/GiB")
		b.ReportMetric(wall.Seconds()/gib, "wall-s/GiB")
		b.ReportMetric(float64(stats.bytesWritten)/float64(stats.bytesRead)*100, "recopy-%")
		l.Close()

		// Produce to another log, alone and during a cleaning.
		l2, lc2 := benchCleanerLog(b, size)
		clock := newLtClock()
		other, _ := ltOpen(b, filepath.Join(b.TempDir(), "other-0"), DefaultConfig(), clock, false, nil)
		batch := ltBatch(b, ltBatchSpec{n: 16, valueSize: 1000, ts: clock.Now().UnixMilli()})
		produce := func(stop *atomic.Bool, d time.Duration) float64 {
			var bytes int64
			start := time.Now()
			for (stop == nil && time.Since(start) < d) || (stop != nil && !stop.Load()) {
				SetBaseOffset(batch, 0)
				if _, err := other.Append(batch, 0); err != nil {
					b.Fatal(err)
				}
				bytes += int64(len(batch))
			}
			return float64(bytes) / time.Since(start).Seconds() / (1 << 20)
		}
		before := produce(nil, wall)
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			lc2.threads[0].tryCleanFilthiestLog()
			stop.Store(true)
		}()
		during := produce(&stop, 0)
		wg.Wait()
		alone := (before + produce(nil, wall)) / 2
		b.ReportMetric(alone, "produce-MiB/s-alone")
		b.ReportMetric(during, "produce-MiB/s-cleaning")
		b.ReportMetric(100*(1-during/alone), "produce-drop-%")
		other.Close()
		l2.Close()
	}
}
