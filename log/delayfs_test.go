package log

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A DelayFS slows appends and fsyncs by its delay, changed at run time,
// keeps the *os.File for sendfile, and costs nothing at delay 0.
func TestDelayFSSlowsWritesAndSyncs(t *testing.T) {
	clock := newLtClock()
	dfs := NewDelayFS(nil)
	l, _ := ltOpen(t, t.TempDir(), ltConfig(), clock, false, dfs)
	defer l.Close()
	ts := clock.Now().UnixMilli()
	timed := func(fn func()) time.Duration {
		start := time.Now()
		fn()
		return time.Since(start)
	}
	fast := timed(func() { ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 100, ts: ts})) })
	const delay = 50 * time.Millisecond
	dfs.SetDelay(delay)
	if got := dfs.Delay(); got != delay {
		t.Fatalf("Delay() = %v", got)
	}
	if d := timed(func() { ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 100, ts: ts})) }); d < delay {
		t.Fatalf("append took %v with a %v delay", d, delay)
	}
	if d := timed(func() {
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}); d < delay {
		t.Fatalf("flush took %v with a %v delay", d, delay)
	}
	dfs.SetDelay(0)
	if d := timed(func() { ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 100, ts: ts})) }); d >= delay {
		t.Fatalf("append took %v after clearing the delay (first append %v)", d, fast)
	}
	if hs := ltReadAll(t, l, 0); len(hs) != 3 {
		t.Fatalf("%d batches, want 3", len(hs))
	}
	f, err := dfs.OpenFile(filepath.Join(t.TempDir(), "x"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.OSFile() == nil {
		t.Fatal("a DelayFS file lost its *os.File (sendfile)")
	}
}
