package log

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func ftManager(t *testing.T, dirs []string, clock *ltClock, rate int64) *Manager {
	t.Helper()
	m, err := NewManager(ManagerConfig{
		Dirs: dirs, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Now: clock.Now,
		ConfigFor: func(string) Config { return ltConfig() }, AlterLogDirsBytesPerSecond: func() int64 { return rate },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ftWait polls cond for up to 20 s.
func ftWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ftSpans are the (base, last) offsets of the batches of a log.
func ftSpans(t *testing.T, l *Log) [][2]int64 {
	var out [][2]int64
	for _, h := range ltReadAll(t, l, l.LogStartOffset()) {
		out = append(out, [2]int64{h.BaseOffset, h.LastOffset()})
	}
	return out
}

func ftEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// A log moved to another dir while being appended to and truncated keeps
// every batch it has, in order, and ends up only in the new dir.
func TestMoveLogBetweenDirs(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	clock := newLtClock()
	m := ftManager(t, []string{d1, d2}, clock, 512<<10)
	defer m.Close()
	m.Start()
	tp := TopicPartition{"t", 0}
	l, err := m.GetOrCreateLog(tp, [16]byte{1}, ltConfig())
	if err != nil {
		t.Fatal(err)
	}
	src, dst := filepath.Dir(l.Dir()), d2
	if src == d2 {
		dst = d1
	}
	var spans [][2]int64
	appendN := func(n int) {
		for range n {
			info := ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 10, valueSize: 100, ts: clock.Now().UnixMilli()}))
			spans = append(spans, [2]int64{info.FirstOffset, info.LastOffset})
		}
	}
	var bases []int64 // the segments just before the swap
	appendN(300)      // ~25 segments, ~0.4 MB: 0.8 s at 512 KB/s
	if err := m.AlterLogDir(tp, dst); err != nil {
		t.Fatal(err)
	}
	if err := m.AlterLogDir(tp, dst); err != nil {
		t.Fatalf("again while moving: %v", err)
	}
	ftWait(t, "a future log with data", func() bool {
		_, size, _, ok := l.FutureInfo()
		return ok && size > 0
	})
	var sawFuture bool
	for _, di := range m.DirInfos() {
		for _, p := range di.Partitions {
			if p.IsFuture && di.Path == filepath.Clean(dst) && p.OffsetLag > 0 {
				sawFuture = true
			}
		}
	}
	if !sawFuture {
		t.Fatalf("DirInfos shows no future replica with a lag in %s: %+v", dst, m.DirInfos())
	}
	// Appends and a truncation while the copy runs.
	appendN(50)
	cut := spans[len(spans)-20][0]
	if _, err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	spans = spans[:len(spans)-20]
	appendN(50)

	bases = l.SegmentBaseOffsets()
	if filepath.Dir(l.Dir()) != filepath.Clean(src) {
		t.Fatal("moved before the test was done writing: slow the copy down")
	}
	ftWait(t, "the move", func() bool { return filepath.Dir(l.Dir()) == filepath.Clean(dst) })
	if got := ftSpans(t, l); len(got) != len(spans) || got[0] != spans[0] || got[len(got)-1] != spans[len(spans)-1] {
		t.Fatalf("after the move: %d batches %v..., want %d", len(got), got[:min(3, len(got))], len(spans))
	} else {
		for i := range got {
			if got[i] != spans[i] {
				t.Fatalf("batch %d: %v, want %v", i, got[i], spans[i])
			}
		}
	}
	ltCheckIndexes(t, l)
	if got := l.SegmentBaseOffsets(); len(got) != len(bases) {
		t.Errorf("segments %v after the move, %v before", got, bases)
	} else {
		for i := range got {
			if got[i] != bases[i] {
				t.Errorf("segments %v after the move, %v before", got, bases)
				break
			}
		}
	}
	appendN(5) // the moved log takes appends
	if _, _, _, ok := l.FutureInfo(); ok {
		t.Fatal("future still set after the move")
	}
	ftWait(t, "the old dir removed", func() bool { return len(ftEntries(t, src)) == 0 })
	if names := ftEntries(t, dst); len(names) != 1 || names[0] != "t-0" {
		t.Fatalf("new dir holds %v", names)
	}
	for _, di := range m.DirInfos() {
		for _, p := range di.Partitions {
			if p.IsFuture || di.Path != filepath.Clean(dst) {
				t.Fatalf("after the move DirInfos has %+v in %s", p, di.Path)
			}
		}
	}

	// Reopened, the log is in the new dir with every batch.
	want := ftSpans(t, l)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := ftManager(t, []string{d1, d2}, clock, 0)
	defer m2.Close()
	l2 := m2.GetLog(tp)
	if l2 == nil || filepath.Dir(l2.Dir()) != filepath.Clean(dst) {
		t.Fatalf("reopened log: %v", l2)
	}
	if got := ftSpans(t, l2); len(got) != len(want) || got[len(got)-1] != want[len(want)-1] {
		t.Fatalf("reopened: %d batches, want %d", len(got), len(want))
	}
}

func TestAlterLogDirErrors(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m := ftManager(t, []string{d1, d2}, newLtClock(), 0)
	defer m.Close()
	tp := TopicPartition{"t", 3}
	if err := m.AlterLogDir(tp, t.TempDir()); !errors.Is(err, kerr.LogDirNotFound) {
		t.Fatalf("unknown dir: %v", err)
	}
	// Not hosted: REPLICA_NOT_AVAILABLE, and the log is created there.
	for _, d := range []string{d1, d2} {
		tp.Partition++
		if err := m.AlterLogDir(tp, d); !errors.Is(err, kerr.ReplicaNotAvailable) {
			t.Fatalf("not hosted: %v", err)
		}
		l, err := m.GetOrCreateLog(tp, [16]byte{1}, ltConfig())
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(l.Dir()) != d {
			t.Fatalf("created in %s, want the preferred %s", l.Dir(), d)
		}
		// Already there: nothing to do.
		if err := m.AlterLogDir(tp, d); err != nil {
			t.Fatal(err)
		}
		if _, _, _, ok := l.FutureInfo(); ok {
			t.Fatal("a future for a log already in its dir")
		}
	}
}

// A move interrupted by a shutdown resumes from its future log at the next
// start-up, cut back to where the current log still agrees with it (here
// the current log was truncated and written again in a new leader epoch
// while the broker was down); a future dir without its current log (a
// crash between the swap's renames) is promoted.
func TestMoveLogRestart(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	clock := newLtClock()
	m := ftManager(t, []string{d1, d2}, clock, 64<<10) // slow: seconds
	m.Start()
	tp := TopicPartition{"t", 0}
	l, err := m.GetOrCreateLog(tp, [16]byte{1}, ltConfig())
	if err != nil {
		t.Fatal(err)
	}
	src, dst := filepath.Dir(l.Dir()), d2
	if src == d2 {
		dst = d1
	}
	for range 300 {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 10, valueSize: 100}))
	}
	if err := m.AlterLogDir(tp, dst); err != nil {
		t.Fatal(err)
	}
	ftWait(t, "a future log with 40 KiB", func() bool {
		_, size, _, ok := l.FutureInfo()
		return ok && size > 40<<10
	})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	names := ftEntries(t, dst)
	if len(names) != 1 || !strings.HasSuffix(names[0], FutureDirSuffix) {
		t.Fatalf("after shutdown mid-move %s holds %v", dst, names)
	}
	futureDir := names[0]

	m2 := ftManager(t, []string{d1, d2}, clock, 64<<10)
	l2 := m2.GetLog(tp)
	if filepath.Dir(l2.Dir()) != filepath.Clean(src) {
		t.Fatalf("serving from %s", l2.Dir())
	}
	// Offsets 100 on, which the future log has, are replaced in epoch 1
	// by batches of 7 records (other batch boundaries than the 10s).
	if _, err := l2.TruncateTo(100); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if _, err := l2.Append(ltBatch(t, ltBatchSpec{n: 7, valueSize: 90}), 1); err != nil {
			t.Fatal(err)
		}
	}
	want := ftSpans(t, l2)
	m2.Start()
	if names := ftEntries(t, dst); len(names) != 1 || names[0] != futureDir {
		t.Fatalf("after the restart %s holds %v, want the future log %s resumed", dst, names, futureDir)
	}
	if _, size, _, ok := l2.FutureInfo(); !ok || size == 0 {
		t.Fatalf("the resumed move has no data (%d, %v)", size, ok)
	}
	ftWait(t, "the resumed move", func() bool { return filepath.Dir(l2.Dir()) == filepath.Clean(dst) })
	if got := ftSpans(t, l2); !slices.Equal(got, want) {
		t.Fatalf("after the resumed move the batches are\n%v\nwant\n%v", got, want)
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}

	// The crash between the renames: the current dir renamed -delete,
	// the future not yet renamed.
	cur := filepath.Join(dst, "t-0")
	if err := os.Rename(cur, filepath.Join(dst, "t-0.00ff-future")); err != nil {
		t.Fatal(err)
	}
	ltCopyDir(t, filepath.Join(dst, "t-0.00ff-future"), filepath.Join(src, "t-0.00aa-delete"))
	m3 := ftManager(t, []string{d1, d2}, clock, 0)
	defer m3.Close()
	l3 := m3.GetLog(tp)
	if l3 == nil || l3.Dir() != cur {
		t.Fatalf("promoted log: %v", l3)
	}
	if got := ftSpans(t, l3); !slices.Equal(got, want) {
		t.Fatalf("promoted: %d batches, want %d", len(got), len(want))
	}
	if n1, n2 := ftEntries(t, src), ftEntries(t, dst); len(n1) != 0 || len(n2) != 1 {
		t.Fatalf("dirs after promotion: %v, %v", n1, n2)
	}
}

// Deleting a log being moved removes its future too.
func TestMoveLogDeleted(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m := ftManager(t, []string{d1, d2}, newLtClock(), 64<<10)
	defer m.Close()
	m.Start()
	tp := TopicPartition{"t", 0}
	l, err := m.GetOrCreateLog(tp, [16]byte{1}, ltConfig())
	if err != nil {
		t.Fatal(err)
	}
	dst := d2
	if filepath.Dir(l.Dir()) == d2 {
		dst = d1
	}
	for range 100 {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 10, valueSize: 100}))
	}
	if err := m.AlterLogDir(tp, dst); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = m.DeleteLog(tp) }()
	wg.Wait()
	ftWait(t, "both dirs empty", func() bool { return len(ftEntries(t, d1)) == 0 && len(ftEntries(t, d2)) == 0 })
}
