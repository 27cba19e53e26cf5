package log

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// dyingFS is a process that dies at its n-th mutating file operation
// (open for writing, write, sync, rename, remove, truncate): that
// operation and every later one fail, so the files stay as they were at
// that instant. Reads go on working. Underneath, a FaultFS remembers what
// was fsynced, so Crash can then drop what the OS had not written out.
type dyingFS struct {
	*FaultFS
	mu    sync.Mutex
	n     int // ops so far
	dieAt int // 0: never
}

func newDyingFS(dieAt int) *dyingFS { return &dyingFS{FaultFS: NewFaultFS(nil), dieAt: dieAt} }

func (d *dyingFS) op(what, path string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	if d.dieAt > 0 && d.n >= d.dieAt {
		return &os.PathError{Op: what, Path: path, Err: ErrInjected}
	}
	return nil
}

func (d *dyingFS) ops() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

func (d *dyingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC) != 0 {
		if err := d.op("open", name); err != nil {
			return nil, err
		}
	}
	f, err := d.FaultFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &dyingFile{File: f, d: d, name: name}, nil
}

func (d *dyingFS) Rename(o, n string) error {
	if err := d.op("rename", o); err != nil {
		return err
	}
	return d.FaultFS.Rename(o, n)
}

func (d *dyingFS) Remove(name string) error {
	if err := d.op("remove", name); err != nil {
		return err
	}
	return d.FaultFS.Remove(name)
}

func (d *dyingFS) SyncDir(path string) error {
	if err := d.op("syncdir", path); err != nil {
		return err
	}
	return d.FaultFS.SyncDir(path)
}

type dyingFile struct {
	File
	d    *dyingFS
	name string
}

func (f *dyingFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.d.op("write", f.name); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *dyingFile) Write(p []byte) (int, error) {
	if err := f.d.op("write", f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *dyingFile) Sync() error {
	if err := f.d.op("sync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *dyingFile) Truncate(size int64) error {
	if err := f.d.op("truncate", f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// crashSource builds a compacted log worth cleaning: keys overwritten
// across segments, tombstones, an idempotent producer, a compressed
// batch. With precleaned, it is cleaned once, the tombstones' delete
// horizon passes and more overwrites follow, so the next pass merges
// shrunk segments, drops segments entirely and removes tombstones. It
// returns the dir, the clock's time, and the records in the log.
func crashSource(t *testing.T, precleaned bool) (string, time.Time, []ctRec) {
	clock := newLtClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, _ := ltOpen(t, dir, ctConfig(), clock, false, nil)
	var all []ctRec
	ts := clock.Now().UnixMilli()
	for i := 0; i < 60; i++ {
		s := ctBatchSpec{ts: ts + int64(i)}
		for j := 0; j < 4; j++ {
			k := fmt.Sprintf("r%d-%d", i/20, (i*3+j)%5) // a key space per third of the log
			s.keys = append(s.keys, k)
			v := bytes.Repeat([]byte{byte('a' + i%26)}, 150)
			if (i+j)%11 == 0 {
				v = nil // tombstone
			}
			s.values = append(s.values, v)
		}
		switch {
		case i%5 == 0:
			s.pid, s.epoch, s.seq = 9, 0, int32(i/5*4)
		case i%7 == 0:
			s.codec = CodecLZ4
		}
		info := ltAppend(t, l, ctBatch(t, s))
		for j := range s.keys {
			all = append(all, ctRec{off: info.FirstOffset + int64(j), key: s.keys[j], value: s.values[j]})
		}
	}
	ctAppend(t, l)
	if precleaned {
		lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
		if !ctCleanOnce(t, lc) {
			t.Fatal("nothing cleaned")
		}
		clock.Advance(2 * time.Second) // past delete.retention.ms
		// Large overwrites of every key by the producer: the shrunk
		// segments form one group that loses every record.
		for i := 0; i < 5; i++ {
			s := ctBatchSpec{ts: clock.Now().UnixMilli(), pid: 9, seq: int32(48 + 3*i)}
			for j := 0; j < 3; j++ {
				s.keys = append(s.keys, fmt.Sprintf("r%d-%d", j, i))
				s.values = append(s.values, bytes.Repeat([]byte{byte('A' + i)}, 2500))
			}
			ltAppend(t, l, ctBatch(t, s))
		}
		ctAppend(t, l)
		all = ctRead(t, l)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, clock.Now(), all
}

// checkWhole checks a log read after a crash against the log before the
// pass (before) and after a whole pass (after; cleaned holds the base
// offsets of its cleaned segments, one per group): in the offsets of each
// group, the log holds exactly the records it had before or exactly those
// of the cleaned segment. So nothing is invented, lost, duplicated or
// resurrected, whatever instant the crash hit.
func checkWhole(t *testing.T, what string, got, before, after []ctRec, groups []int64) {
	t.Helper()
	in := func(recs []ctRec, from, to int64) string {
		var b strings.Builder
		for _, r := range recs {
			if r.off >= from && r.off < to {
				b.WriteString(r.String())
				b.WriteByte(' ')
			}
		}
		return b.String()
	}
	for i, from := range groups {
		to := int64(1<<63 - 1)
		if i+1 < len(groups) {
			to = groups[i+1]
		}
		g, b, a := in(got, from, to), in(before, from, to), in(after, from, to)
		if g != b && g != a {
			t.Fatalf("%s: offsets [%d, %d) hold\n%s\nnot what they held before the pass\n%s\nnor after it\n%s", what, from, to, g, b, a)
		}
	}
}

// A process killed at any file operation of a cleaning pass (every
// write, sync, rename and remove, from the first write of the .cleaned
// files to the cleaner checkpoint) leaves a whole log: after the crash
// (un-synced data dropped) start-up completes or rolls back the swap, each
// group of segments is wholly old or wholly cleaned, nothing is left over,
// and the next pass cleans it fully.
func TestCleanerCrashAtEveryFileOperation(t *testing.T) {
	for _, precleaned := range []bool{false, true} {
		t.Run(fmt.Sprintf("precleaned=%v", precleaned), func(t *testing.T) { testCrashAtEveryOp(t, precleaned) })
	}
}

func testCrashAtEveryOp(t *testing.T, precleaned bool) {
	src, at, before := crashSource(t, precleaned)
	newClock := func() *ltClock { c := newLtClock(); c.t = at; return c }
	run := func(dieAt int) (*dyingFS, string) {
		dir := filepath.Join(t.TempDir(), "t-0")
		ltCopyDir(t, src, dir)
		fsys := newDyingFS(0)
		clock := newClock()
		l, _ := ltOpen(t, dir, ctConfig(), clock, true, fsys)
		l.UpdateHighWatermark(l.LogEndOffset())
		var pending []func() // file.delete.delay.ms: not before the crash
		l.scheduleDelete = func(_ time.Duration, fn func()) { pending = append(pending, fn) }
		lc, err := newLogCleaner(ctCleanerConfig(), []string{filepath.Dir(dir)}, fsys, ctLogger(), clock.Now, func() []*Log { return []*Log{l} })
		if err != nil {
			t.Fatal(err)
		}
		fsys.mu.Lock()
		fsys.n, fsys.dieAt = 0, dieAt
		fsys.mu.Unlock()
		ctCleanOnce(t, lc)
		// The process is gone: its files are closed by the OS, un-synced
		// data may be lost.
		l.segMu.RLock()
		for _, s := range l.segs {
			s.closeFiles()
		}
		l.segMu.RUnlock()
		if err := fsys.Crash(); err != nil {
			t.Fatal(err)
		}
		return fsys, dir
	}
	dry, dryDir := run(0)
	total := dry.ops()
	if total < 20 {
		t.Fatalf("a cleaning pass did only %d file operations", total)
	}
	l, _ := ltOpen(t, dryDir, ctConfig(), newClock(), false, nil)
	l.UpdateHighWatermark(l.LogEndOffset())
	after := ctRead(t, l)
	groups := l.SegmentBaseOffsets()
	l.Close()
	t.Logf("a cleaning pass does %d file operations; %d records before, %d after, in %d groups", total, len(before), len(after), len(groups)-1)
	if precleaned && len(groups) > 5 {
		t.Fatalf("the pass over a cleaned log made %d segments: groups did not merge", len(groups))
	}
	completed := 0
	for n := 1; n <= total+1; n++ {
		_, dir := run(n)
		clock := newClock()
		l, res := ltOpen(t, dir, ctConfig(), clock, false, nil)
		completed += res.CompletedSwaps
		l.UpdateHighWatermark(l.LogEndOffset())
		what := fmt.Sprintf("died at operation %d of %d", n, total)
		checkWhole(t, what, ctRead(t, l), before, after, groups)
		ltCheckIndexes(t, l)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			for _, suffix := range []string{CleanedFileSuffix, SwapFileSuffix, DeletedFileSuffix} {
				if strings.HasSuffix(e.Name(), suffix) {
					t.Fatalf("%s: %s left after start-up", what, e.Name())
				}
			}
		}
		// The next pass (from the log start) cleans it as a whole pass
		// would have.
		lc := ctCleaner(t, []string{filepath.Dir(dir)}, clock, ctCleanerConfig(), l)
		lc.mgr.mu.Lock()
		delete(lc.mgr.checkpoints[filepath.Dir(dir)], l.tp)
		lc.mgr.mu.Unlock()
		if !ctCleanOnce(t, lc) {
			t.Fatalf("%s: nothing cleaned after the restart", what)
		}
		if got := ctRead(t, l); fmt.Sprint(got) != fmt.Sprint(after) {
			t.Fatalf("%s: cleaned again:\n%v\nwant\n%v", what, got, after)
		}
		l.Close()
	}
	if completed == 0 {
		t.Fatal("no crash left a swap for start-up to complete")
	}
	t.Logf("%d crashes left a swap that start-up completed", completed)
}
