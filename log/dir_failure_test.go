package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// dfManager opens a Manager over ffs on dirs.
func dfManager(t *testing.T, dirs []string, ffs FS, reg prometheus.Registerer, out io.Writer) (*Manager, error) {
	t.Helper()
	if out == nil {
		out = io.Discard
	}
	return NewManager(ManagerConfig{
		Dirs: dirs, FS: ffs, Logger: slog.New(slog.NewTextHandler(out, nil)), Now: newLtClock().Now,
		ConfigFor: func(string) Config { return ltConfig() }, Registerer: reg,
	})
}

// dfFill creates n partitions of topic t (spread over the dirs) with a few
// batches each and returns them by dir.
func dfFill(t *testing.T, m *Manager, n int) map[string][]*Log {
	t.Helper()
	byDir := map[string][]*Log{}
	ts := newLtClock().Now().UnixMilli()
	for p := 0; p < n; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"t", int32(p)}, [16]byte{1}, ltConfig())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 2, valueSize: 100, ts: ts}))
		}
		l.UpdateHighWatermark(l.LogEndOffset())
		byDir[filepath.Dir(l.Dir())] = append(byDir[filepath.Dir(l.Dir())], l)
	}
	return byDir
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A disk that starts failing (EIO on every write under one log dir) takes
// that dir offline: its logs answer KAFKA_STORAGE_ERROR and are dropped
// and closed, DirInfos, OfflineDirs and the metrics say so, the other dir
// goes on serving, and a restart with the disk healthy again finds
// everything that was acknowledged.
func TestLogDirFailureTakesTheDirOffline(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	ffs := NewFaultFS(nil)
	reg := prometheus.NewRegistry()
	out := &syncBuffer{}
	m, err := dfManager(t, dirs, ffs, reg, out)
	if err != nil {
		t.Fatal(err)
	}
	byDir := dfFill(t, m, 6)
	bad, good := byDir[dirs[0]], byDir[dirs[1]]
	if len(bad) != 3 || len(good) != 3 {
		t.Fatalf("partitions per dir: %d and %d", len(bad), len(good))
	}
	ends := map[TopicPartition]int64{}
	for _, l := range append(bad, good...) {
		ends[l.tp] = l.LogEndOffset()
	}
	ffs.Inject(Fault{Op: OpWrite, PathContains: dirs[0], Sticky: true, Err: syscall.EIO})
	ts := newLtClock().Now().UnixMilli()
	_, err = bad[0].Append(ltBatch(t, ltBatchSpec{n: 1, ts: ts}), 0)
	if !errors.Is(err, kerr.KafkaStorageError) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("append on the failing disk: %v", err)
	}
	// Every log of the dir is offline at once, even those that did not
	// touch the disk yet.
	for _, l := range bad {
		var f *DirFailure
		if err := l.Offline(); !errors.As(err, &f) || f.Dir != dirs[0] || f.Op != "write" {
			t.Fatalf("%s: Offline() = %v", l.tp, err)
		}
		if _, err := l.Append(ltBatch(t, ltBatchSpec{n: 1, ts: ts}), 0); !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("%s: append after the failure: %v", l.tp, err)
		}
	}
	waitFor(t, "the failed dir's logs to leave the manager", func() bool { return len(m.Logs()) == 3 })
	for _, l := range good {
		if l.Offline() != nil {
			t.Fatalf("%s in the good dir is offline", l.tp)
		}
		ltAppend(t, l, ltBatch(t, ltBatchSpec{n: 1, ts: ts}))
		ends[l.tp]++
		if m.GetLog(l.tp) != l {
			t.Fatalf("%s left the manager", l.tp)
		}
	}
	if got := m.OfflineDirs(); len(got) != 1 || got[0] != dirs[0] {
		t.Fatalf("OfflineDirs = %v", got)
	}
	// The broker still reports where the offline logs are (KIP-858).
	offline := m.OfflineLogs()
	for _, l := range bad {
		if offline[l.tp] != dirs[0] {
			t.Fatalf("OfflineLogs()[%s] = %q, want %s", l.tp, offline[l.tp], dirs[0])
		}
	}
	if len(offline) != len(bad) {
		t.Fatalf("OfflineLogs = %v", offline)
	}
	infos := m.DirInfos()
	if !errors.Is(infos[0].Err, kerr.KafkaStorageError) || len(infos[0].Partitions) != 0 || infos[1].Err != nil || len(infos[1].Partitions) != 3 {
		t.Fatalf("DirInfos: %+v", infos)
	}
	if n := gaugeValue(t, reg, "kafka_log_logmanager_offlinelogdirectorycount", ""); n != 1 {
		t.Fatalf("offlinelogdirectorycount = %v", n)
	}
	if n := gaugeValue(t, reg, "kafka_log_logmanager_logdirectoryoffline", dirs[0]); n != 1 {
		t.Fatalf("logdirectoryoffline{%s} = %v", dirs[0], n)
	}
	if n := gaugeValue(t, reg, "kafka_log_logmanager_logdirectoryoffline", dirs[1]); n != 0 {
		t.Fatalf("logdirectoryoffline{%s} = %v", dirs[1], n)
	}
	// The partitions of the failed dir are not created elsewhere (their
	// data is there), new ones go to the good dir, and deleting one
	// forgets it.
	if _, err := m.GetOrCreateLog(bad[1].tp, [16]byte{1}, ltConfig()); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("re-creating a partition of the offline dir: %v", err)
	}
	l, err := m.GetOrCreateLog(TopicPartition{"new", 0}, [16]byte{2}, ltConfig())
	if err != nil || filepath.Dir(l.Dir()) != dirs[1] {
		t.Fatalf("new partition: %v", err)
	}
	if err := m.DeleteLog(bad[2].tp); err != nil {
		t.Fatalf("deleting a partition of the offline dir: %v", err)
	}
	if n := strings.Count(out.String(), "log dir failed"); n != 1 {
		t.Fatalf("the failure was logged %d times:\n%s", n, out.String())
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if ffs.OpenFiles() != 0 {
		t.Fatalf("%d files left open", ffs.OpenFiles())
	}

	// The disk is replaced (healthy again): nothing acknowledged is lost.
	m2, err := dfManager(t, dirs, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	for tp, end := range ends {
		l := m2.GetLog(tp)
		if l == nil || l.LogEndOffset() != end {
			t.Fatalf("%s after restart: %v, want end %d", tp, l, end)
		}
	}
}

// gaugeValue returns the value of a gauge (with label value label, if
// not empty).
func gaugeValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" || len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() == label {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s{%s}", name, label)
	return 0
}

// Each kind of I/O failure on the log path takes the dir offline; running
// out of a resource (files, space) fails only the operation, and the next
// one succeeds once the resource is back; a failed fsync always takes the
// dir offline, whatever the error.
func TestLogDirFailureCauses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   Fault
		op      func(t *testing.T, l *Log) error
		offline bool
	}{
		{"write EIO", Fault{Op: OpWrite, Err: syscall.EIO}, appendOne, true},
		{"write ENOSPC", Fault{Op: OpWrite, Err: syscall.ENOSPC, Short: true}, appendOne, false},
		{"write EDQUOT", Fault{Op: OpWrite, Err: syscall.EDQUOT}, appendOne, false},
		{"sync EIO", Fault{Op: OpSync, Err: syscall.EIO}, flush, true},
		{"sync ENOSPC", Fault{Op: OpSync, Err: syscall.ENOSPC}, flush, true},
		{"roll open EMFILE", Fault{Op: OpOpen, Err: syscall.EMFILE}, roll, false},
		{"roll open EROFS", Fault{Op: OpOpen, Err: syscall.EROFS}, roll, true},
		{"roll truncate EIO", Fault{Op: OpTruncate, Err: syscall.EIO}, roll, true},
		{"read EIO", Fault{Op: OpRead, Err: syscall.EIO}, readFirst, true},
		{"retention rename EIO", Fault{Op: OpRename, PathContains: LogFileSuffix, Err: syscall.EIO}, retention, true},
		{"injected", Fault{Op: OpWrite}, appendOne, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ffs := NewFaultFS(nil)
			m, err := dfManager(t, []string{dir}, ffs, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			l := dfFill(t, m, 1)[dir][0]
			ffs.Inject(tc.fault)
			err = tc.op(t, l)
			if !errors.Is(err, kerr.KafkaStorageError) {
				t.Fatalf("error %v", err)
			}
			if tc.fault.Err != nil && !errors.Is(err, tc.fault.Err) {
				t.Fatalf("error %v does not wrap %v", err, tc.fault.Err)
			}
			if got := l.Offline() != nil; got != tc.offline {
				t.Fatalf("offline = %v (%v)", got, l.Offline())
			}
			if tc.offline {
				return
			}
			// The resource is back: the same operation succeeds.
			if err := tc.op(t, l); err != nil {
				t.Fatalf("after the fault: %v", err)
			}
			if hs := ltReadAll(t, l, 0); len(hs) < 5 {
				t.Fatalf("%d batches", len(hs))
			}
			// Every segment file on disk belongs to a segment of the log.
			files, _ := filepath.Glob(filepath.Join(l.Dir(), "*"+LogFileSuffix))
			if len(files) != l.NumSegments() {
				t.Fatalf("%d .log files for %d segments: %v", len(files), l.NumSegments(), files)
			}
		})
	}
}

func flush(_ *testing.T, l *Log) error { return l.Flush() }

func roll(t *testing.T, l *Log) error {
	if err := appendOne(t, l); err != nil {
		return err
	}
	return l.Roll()
}

func appendOne(t *testing.T, l *Log) error {
	_, err := l.Append(ltBatch(t, ltBatchSpec{n: 1, ts: newLtClock().Now().UnixMilli()}), 0)
	return err
}

func readFirst(_ *testing.T, l *Log) error {
	_, err := l.Read(l.LogStartOffset(), 1<<20, l.HighWatermark(), true)
	return err
}

// retention deletes everything below the high watermark by DeleteRecords.
func retention(_ *testing.T, l *Log) error {
	if err := l.Roll(); err != nil {
		return err
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	_, err := l.DeleteRecordsBefore(l.HighWatermark())
	return err
}

// A roll that cannot open the new segment's index (out of file
// descriptors) leaves no file of that segment behind: an empty .log at the
// log end would be taken at start-up for a segment, and the batches
// appended to the old one after it would be hidden.
func TestFailedRollLeavesNoSegmentFile(t *testing.T) {
	dir := t.TempDir()
	ffs := NewFaultFS(nil)
	m, err := dfManager(t, []string{dir}, ffs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := dfFill(t, m, 1)[dir][0]
	base := l.LogEndOffset()
	ffs.Inject(Fault{Op: OpOpen, PathContains: FilenamePrefixFromOffset(base) + IndexFileSuffix, Err: syscall.EMFILE})
	if err := l.Roll(); !IsTooManyOpenFiles(err) {
		t.Fatalf("roll: %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), FilenamePrefixFromOffset(base)+LogFileSuffix)); !os.IsNotExist(err) {
		t.Fatalf("the failed segment's .log is there: %v", err)
	}
	for i := 0; i < 3; i++ {
		if err := appendOne(t, l); err != nil {
			t.Fatal(err)
		}
	}
	end := l.LogEndOffset()
	l.UpdateHighWatermark(end)
	m.Close()
	m, err = dfManager(t, []string{dir}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l = m.GetLog(l.tp)
	if l.LogEndOffset() != end || len(ltReadAll(t, l, base)) != 3 {
		t.Fatalf("after restart: end %d (want %d)", l.LogEndOffset(), end)
	}
}

// Creating a log when the process is out of file descriptors fails with an
// error that says so, leaves the dir online and no half-made partition dir
// behind, and succeeds once descriptors are free again.
func TestCreateLogOutOfFileDescriptors(t *testing.T) {
	dir := t.TempDir()
	ffs := NewFaultFS(nil)
	m, err := dfManager(t, []string{dir}, ffs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for n := 1; n <= 3; n++ {
		ffs.Inject(Fault{Op: OpOpen, Nth: n, Err: syscall.EMFILE})
		tp := TopicPartition{"t", int32(n)}
		_, err := m.GetOrCreateLog(tp, [16]byte{1}, ltConfig())
		if !errors.Is(err, kerr.KafkaStorageError) || !IsTooManyOpenFiles(err) {
			t.Fatalf("open #%d failing: %v", n, err)
		}
		if _, serr := os.Stat(filepath.Join(dir, tp.String())); !os.IsNotExist(serr) {
			t.Fatalf("a half-made log dir was left: %v", serr)
		}
		if len(m.OfflineDirs()) != 0 {
			t.Fatal("EMFILE took the dir offline")
		}
		ffs.Reset()
		if _, err := m.GetOrCreateLog(tp, [16]byte{1}, ltConfig()); err != nil {
			t.Fatalf("retry: %v", err)
		}
	}
}

// Start-up that runs out of file descriptors fails with a *FileLimitError
// naming the segments and the limit, and closes what it opened.
func TestStartupOutOfFileDescriptors(t *testing.T) {
	dir := t.TempDir()
	m, err := dfManager(t, []string{dir}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dfFill(t, m, 4)
	segs := 0
	for _, l := range m.Logs() {
		segs += l.NumSegments()
	}
	m.Close()
	ffs := NewFaultFS(nil)
	ffs.Inject(Fault{Op: OpOpen, Nth: 6, Sticky: true, Err: syscall.EMFILE})
	_, err = dfManager(t, []string{dir}, ffs, nil, nil)
	var fl *FileLimitError
	if !errors.As(err, &fl) || fl.Segments != segs || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("start-up: %v (want %d segments)", err, segs)
	}
	if limit, ok := openFileLimit(); ok && fl.Limit != limit {
		t.Fatalf("limit %d, want %d", fl.Limit, limit)
	}
	msg := err.Error()
	for _, want := range []string{fmt.Sprintf("%d segments", segs), "ulimit -n", "too many open files"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Fatalf("message is not one line: %q", msg)
	}
	if ffs.OpenFiles() != 0 {
		t.Fatalf("%d files left open", ffs.OpenFiles())
	}
}

// A dir that cannot be loaded at start-up is offline and its partitions
// are not re-created elsewhere; a dir that cannot even be listed blocks
// the creation of any log (it may hold it); every dir failing fails
// start-up with each cause on one line.
func TestStartupWithAFailingDir(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m, err := dfManager(t, dirs, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	byDir := dfFill(t, m, 4)
	m.Close()
	badTP := byDir[dirs[0]][0].tp

	ffs := NewFaultFS(nil)
	ffs.Inject(Fault{Op: OpRead, PathContains: dirs[0], Sticky: true, Err: syscall.EIO})
	m, err = dfManager(t, dirs, ffs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Logs()) != 2 || len(m.OfflineDirs()) != 1 {
		t.Fatalf("%d logs, offline %v", len(m.Logs()), m.OfflineDirs())
	}
	if _, err := m.GetOrCreateLog(badTP, [16]byte{1}, ltConfig()); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("re-creating %s: %v", badTP, err)
	}
	if _, err := m.GetOrCreateLog(TopicPartition{"u", 0}, [16]byte{3}, ltConfig()); err != nil {
		t.Fatalf("a new partition: %v", err)
	}
	m.Close()
	if ffs.OpenFiles() != 0 {
		t.Fatalf("%d files left open", ffs.OpenFiles())
	}

	ffs = NewFaultFS(nil)
	ffs.Inject(Fault{Op: OpReadDir, PathContains: dirs[0], Sticky: true, Err: syscall.EIO})
	m, err = dfManager(t, dirs, ffs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetOrCreateLog(TopicPartition{"v", 0}, [16]byte{4}, ltConfig()); !errors.Is(err, kerr.KafkaStorageError) ||
		!strings.Contains(err.Error(), "partitions are unknown") {
		t.Fatalf("creating a log while an unlisted dir is offline: %v", err)
	}
	m.Close()

	ffs = NewFaultFS(nil)
	ffs.Inject(Fault{Op: OpReadDir, Sticky: true, Err: syscall.EIO})
	_, err = dfManager(t, dirs, ffs, nil, nil)
	if !errors.Is(err, kerr.KafkaStorageError) || !strings.Contains(err.Error(), dirs[0]) || !strings.Contains(err.Error(), dirs[1]) ||
		strings.Contains(err.Error(), "\n") {
		t.Fatalf("every dir failing: %v", err)
	}
	if ffs.OpenFiles() != 0 {
		t.Fatalf("%d files left open", ffs.OpenFiles())
	}
}

// OnDirOffline is told of each failed dir once, with the dirs still
// online, also for a dir that held no log; after the last one fails none
// is online (the broker stops then).
func TestOnDirOfflineReportsTheOnlineDirs(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ffs := NewFaultFS(nil)
	m, err := dfManager(t, dirs, ffs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	type report struct {
		dir    string
		online []string
	}
	reports := make(chan report, 10)
	m.OnDirOffline(func(dir string, online []string) { reports <- report{dir, online} })
	byDir := dfFill(t, m, 2) // dirs[2] holds no log
	ts := newLtClock().Now().UnixMilli()
	fail := func(d string) {
		ffs.Inject(Fault{Op: OpWrite, PathContains: d, Sticky: true, Err: syscall.EIO})
		ffs.Inject(Fault{Op: OpOpen, PathContains: d, Sticky: true, Err: syscall.EIO})
	}
	next := func() report {
		select {
		case r := <-reports:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no report")
			return report{}
		}
	}
	fail(dirs[0])
	if _, err := byDir[dirs[0]][0].Append(ltBatch(t, ltBatchSpec{n: 1, ts: ts}), 0); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("append: %v", err)
	}
	if r := next(); r.dir != dirs[0] || !slices.Equal(r.online, dirs[1:]) {
		t.Fatalf("report %+v", r)
	}
	// The empty dir fails when a log is created there.
	fail(dirs[2])
	fail(dirs[1])
	for p := 10; len(m.OnlineDirs()) > 0 && p < 20; p++ {
		m.GetOrCreateLog(TopicPartition{"t", int32(p)}, [16]byte{1}, ltConfig())
		if l := byDir[dirs[1]]; len(l) > 0 {
			l[0].Append(ltBatch(t, ltBatchSpec{n: 1, ts: ts}), 0)
		}
	}
	seen := map[string]bool{}
	var last report
	for range 2 {
		last = next()
		seen[last.dir] = true
	}
	if !seen[dirs[1]] || !seen[dirs[2]] || len(last.online) != 0 {
		t.Fatalf("reports for %v, the last with online %v", seen, last.online)
	}
	select {
	case r := <-reports:
		t.Fatalf("a dir reported twice: %+v", r)
	default:
	}
}
