package log

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// storageErrorLog builds a closed log of a few segments in dir and returns
// the clock's timestamp.
func storageErrorLog(t *testing.T, dir string) {
	t.Helper()
	clock := newLtClock()
	l, _ := ltOpen(t, dir, ltConfig(), clock, false, nil)
	ts := clock.Now().UnixMilli()
	for i := 0; i < 120; i++ {
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 300, ts: ts}))
	}
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments, have %d", l.NumSegments())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies a flat dir (a partition dir).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Every I/O operation loading a log does, made to fail in turn (the Nth
// open, the Nth read, ...), after a clean and an unclean shutdown: the
// load returns an error or a usable log, never panics, and leaves no file
// open on an error. The crash loop was this: openSegment and
// loadLog returned nil with a deferred cleanup that dereferenced it.
func TestLoadLogFailsCleanlyAtEveryIOOperation(t *testing.T) {
	src := filepath.Join(t.TempDir(), "t-0")
	storageErrorLog(t, src)
	ops := []struct {
		op   FaultOp
		name string
	}{
		{OpOpen, "open"}, {OpRead, "read"}, {OpStat, "stat"}, {OpReadDir, "readdir"}, {OpMkdir, "mkdir"},
		{OpWrite, "write"}, {OpSync, "sync"}, {OpTruncate, "truncate"}, {OpRename, "rename"}, {OpRemove, "remove"},
	}
	errnos := []error{syscall.EMFILE, syscall.EIO, syscall.ENOSPC}
	for _, clean := range []bool{true, false} {
		for _, o := range ops {
			failures := 0
			for n := 1; ; n++ {
				dir := filepath.Join(t.TempDir(), "t-0")
				copyDir(t, src, dir)
				// Corrupt the tail so that recovery writes (truncate,
				// index rebuild) when the shutdown was unclean.
				if !clean {
					logs, _ := filepath.Glob(filepath.Join(dir, "*"+LogFileSuffix))
					f, err := os.OpenFile(logs[len(logs)-1], os.O_WRONLY|os.O_APPEND, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.Write([]byte("torn"))
					f.Close()
				}
				ffs := NewFaultFS(nil)
				errno := errnos[n%len(errnos)]
				ffs.Inject(Fault{Op: o.op, Nth: n, Err: errno})
				before := ffs.Count(o.op)
				var l *Log
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("clean=%v: loadLog panicked with the %d-th %s failing: %v", clean, n, o.name, r)
						}
					}()
					l, _, err = loadLog(logParams{
						dir: dir, tp: TopicPartition{"t", 0}, cfg: ltConfig(), fsys: ffs, logger: ltLogger(t),
						now: newLtClock().Now, hadCleanShutdown: clean, logStartOffset: -1, highWatermark: -1,
						recoveryPoint: 0,
					})
				}()
				fired := ffs.Count(o.op)-before >= n
				if err != nil {
					failures++
					if l != nil {
						t.Fatalf("clean=%v %s #%d: an error and a log", clean, o.name, n)
					}
					if !errors.Is(err, errno) && !errors.Is(err, ErrInjected) {
						t.Fatalf("clean=%v %s #%d: error %v does not wrap the cause %v", clean, o.name, n, err, errno)
					}
				} else {
					if l.LogEndOffset() != 240 {
						t.Fatalf("clean=%v %s #%d: loaded with end %d", clean, o.name, n, l.LogEndOffset())
					}
					l.Close()
				}
				if open := ffs.OpenFiles(); open != 0 {
					t.Fatalf("clean=%v %s #%d (err %v): %d files left open", clean, o.name, n, err, open)
				}
				if !fired {
					break // fewer than n such operations: every one was tried
				}
			}
			t.Logf("clean=%v: %s: %d of the load's operations fail it", clean, o.name, failures)
		}
	}
}

// openSegment failing at each of its operations returns a nil segment and
// an error, and closes the .log it opened.
func TestOpenSegmentErrorsCloseWhatWasOpened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	storageErrorLog(t, dir)
	for _, op := range []FaultOp{OpOpen, OpStat, OpRead} {
		for n := 1; n <= 4; n++ {
			ffs := NewFaultFS(nil)
			ffs.Inject(Fault{Op: op, Nth: n, Err: syscall.EMFILE})
			s, _, err := openSegment(ffs, dir, 0, ltConfig(), newLtClock().Now())
			if err == nil {
				s.closeFiles()
				continue
			}
			if s != nil {
				t.Fatalf("op %d #%d: a segment and an error", op, n)
			}
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatalf("op %d #%d: %v", op, n, err)
			}
			if ffs.OpenFiles() != 0 {
				t.Fatalf("op %d #%d: %d files left open", op, n, ffs.OpenFiles())
			}
		}
	}
}
