package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Log dir failure (Kafka's LogDirFailureChannel and the handlers of
// ReplicaManager.handleLogDirFailure and LogManager.handleLogDirFailure).
//
// The Manager does its I/O through dirFailureFS, which reports every
// error of an open, read, write, sync, truncate, rename, remove, stat or
// directory listing under a log dir. An error that says the disk is
// failing takes the whole dir offline at once, as Kafka does on any
// IOException: its logs answer KAFKA_STORAGE_ERROR (Log.Offline, checked
// by Log's writers and by the replica manager before reads), they are
// closed and leave the Manager's list (no retention, flush, checkpoint or
// cleaning touches them), the dir is reported by DirInfos and OfflineDirs
// and counted by kafka_log_logmanager_offlinelogdirectorycount. The other
// dirs go on serving. A dir stays offline until the broker restarts.
//
// Errors that are not the disk's fault do not take a dir offline: a file
// that does not exist (or already does), a file already closed, the end of
// a file, and resource exhaustion — too many open files, no space, quota,
// no memory — on anything but an fsync. Those fail the operation (a
// produce answers KAFKA_STORAGE_ERROR, a log creation is retried by the
// replica manager) and the next one may succeed once the cause has
// passed. A failed fsync always takes the dir offline: the kernel may have
// dropped the dirty pages it could not write.

// DirFailure says why a log dir went offline. It wraps
// kerr.KafkaStorageError and the I/O error.
type DirFailure struct {
	Dir  string
	Op   string // open, read, write, sync, truncate, rename, remove, stat, readdir, mkdir, close
	Path string
	Err  error
	At   time.Time
}

func (f *DirFailure) Error() string {
	return fmt.Sprintf("log dir %s is offline after an I/O error: %s %s: %v", f.Dir, f.Op, f.Path, unwrapPath(f.Err))
}

// Unwrap returns kerr.KafkaStorageError and the cause.
func (f *DirFailure) Unwrap() []error { return []error{kerr.KafkaStorageError, f.Err} }

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// dirHealth is shared by a log dir and its logs.
type dirHealth struct {
	failure atomic.Pointer[DirFailure]
}

// failed returns the dir's failure, or nil (a nil *dirHealth is online).
func (h *dirHealth) failed() error {
	if h == nil {
		return nil
	}
	if f := h.failure.Load(); f != nil {
		return f
	}
	return nil
}

// Offline returns a *DirFailure (wrapping kerr.KafkaStorageError) if the
// log's dir failed, nil otherwise. It takes no lock: the replica manager
// checks it on every produce and fetch.
func (l *Log) Offline() error { return l.health.Load().failed() }

// IsTooManyOpenFiles reports whether err is EMFILE or ENFILE.
func IsTooManyOpenFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// IsResourceExhausted reports whether err says a resource ran out rather
// than that the disk failed: too many open files, no space left, disk
// quota exceeded, no memory. Such an error may pass (files are closed,
// space freed).
func IsResourceExhausted(err error) bool {
	return IsTooManyOpenFiles(err) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.ENOMEM)
}

// isDirFailure reports whether err, from op, means the dir is failing.
func isDirFailure(op string, err error) bool {
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrExist), errors.Is(err, os.ErrClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ENOTEMPTY):
		return false
	case IsResourceExhausted(err):
		return op == "sync"
	}
	return true
}

// dirFailureFS reports the I/O errors of an FS to report (the Manager's
// reportIOError).
type dirFailureFS struct {
	inner  FS
	report func(op, path string, err error)
}

func (f *dirFailureFS) check(op, path string, err error) error {
	if err != nil {
		f.report(op, path, err)
	}
	return err
}

// OpenFile implements FS.
func (f *dirFailureFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	fl, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, f.check("open", name, err)
	}
	return &dirFailureFile{File: fl, fs: f, name: name}, nil
}

// Rename implements FS.
func (f *dirFailureFS) Rename(o, n string) error { return f.check("rename", o, f.inner.Rename(o, n)) }

// Remove implements FS.
func (f *dirFailureFS) Remove(name string) error {
	return f.check("remove", name, f.inner.Remove(name))
}

// RemoveAll implements FS.
func (f *dirFailureFS) RemoveAll(path string) error {
	return f.check("remove", path, f.inner.RemoveAll(path))
}

// MkdirAll implements FS.
func (f *dirFailureFS) MkdirAll(path string, perm os.FileMode) error {
	return f.check("mkdir", path, f.inner.MkdirAll(path, perm))
}

// ReadDir implements FS.
func (f *dirFailureFS) ReadDir(name string) ([]os.DirEntry, error) {
	es, err := f.inner.ReadDir(name)
	return es, f.check("readdir", name, err)
}

// Stat implements FS.
func (f *dirFailureFS) Stat(name string) (os.FileInfo, error) {
	st, err := f.inner.Stat(name)
	return st, f.check("stat", name, err)
}

// SyncDir implements FS.
func (f *dirFailureFS) SyncDir(path string) error {
	return f.check("sync", path, f.inner.SyncDir(path))
}

type dirFailureFile struct {
	File
	fs   *dirFailureFS
	name string
}

func (ff *dirFailureFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := ff.File.ReadAt(p, off)
	return n, ff.fs.check("read", ff.name, err)
}

func (ff *dirFailureFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := ff.File.WriteAt(p, off)
	return n, ff.fs.check("write", ff.name, err)
}

func (ff *dirFailureFile) Write(p []byte) (int, error) {
	n, err := ff.File.Write(p)
	return n, ff.fs.check("write", ff.name, err)
}

func (ff *dirFailureFile) Sync() error { return ff.fs.check("sync", ff.name, ff.File.Sync()) }

func (ff *dirFailureFile) Truncate(size int64) error {
	return ff.fs.check("truncate", ff.name, ff.File.Truncate(size))
}

func (ff *dirFailureFile) Stat() (os.FileInfo, error) {
	st, err := ff.File.Stat()
	return st, ff.fs.check("stat", ff.name, err)
}

func (ff *dirFailureFile) Close() error { return ff.fs.check("close", ff.name, ff.File.Close()) }

// dirOf returns the log dir that holds path, or nil.
func (m *Manager) dirOf(path string) *logDir {
	path = filepath.Clean(path)
	for _, d := range m.dirs {
		if path == d.path || strings.HasPrefix(path, d.path+string(os.PathSeparator)) {
			return d
		}
	}
	return nil
}

// reportIOError is the LogDirFailureChannel: every I/O error of the
// Manager's FS comes here, and one that means the disk is failing takes
// its dir offline.
func (m *Manager) reportIOError(op, path string, err error) {
	if !isDirFailure(op, err) {
		return
	}
	if d := m.dirOf(path); d != nil {
		m.failDir(d, &DirFailure{Dir: d.path, Op: op, Path: path, Err: err, At: m.cfg.Now()})
	}
}

// failDir takes d offline (once): its logs answer KAFKA_STORAGE_ERROR at
// once, and are closed and dropped from the Manager in the background
// (the error may be reported by a goroutine holding a log's locks).
func (m *Manager) failDir(d *logDir, f *DirFailure) {
	if !d.health.failure.CompareAndSwap(nil, f) {
		return
	}
	m.logger.Error("log dir failed: it is offline until the broker restarts, and its partitions answer KAFKA_STORAGE_ERROR",
		"dir", d.path, "op", f.Op, "path", f.Path, "err", unwrapPath(f.Err))
	m.bg.Go(func(<-chan struct{}) { m.handleLogDirFailure(d) })
}

// handleLogDirFailure drops the logs of a failed dir from the Manager,
// remembering their partitions as offline, and closes them (Kafka's
// LogManager.handleLogDirFailure).
func (m *Manager) handleLogDirFailure(d *logDir) {
	m.mu.Lock()
	var logs []*Log
	for tp, l := range m.logs {
		if filepath.Dir(l.Dir()) == d.path {
			delete(m.logs, tp)
			m.perDir[d.path]--
			m.offline[tp] = d.path
			logs = append(logs, l)
		}
	}
	m.mu.Unlock()
	if fn := m.onDirOffline.Load(); fn != nil {
		defer (*fn)(d.path, m.OnlineDirs())
	}
	if len(logs) == 0 {
		return
	}
	for _, l := range logs {
		l.Close() // no flush: the dir failed; errors are expected
	}
	names := make([]string, 0, min(len(logs), 10))
	for _, l := range logs[:min(len(logs), 10)] {
		names = append(names, l.tp.String())
	}
	m.logger.Warn("stopped serving the logs of a failed log dir", "dir", d.path, "partitions", len(logs), "first", strings.Join(names, ","))
	if fn := m.onDirFailure.Load(); fn != nil {
		tps := make([]TopicPartition, len(logs))
		for i, l := range logs {
			tps[i] = l.tp
		}
		(*fn)(d.path, tps)
	}
}

// OnDirFailure sets fn to be called (on a goroutine of the Manager's) with
// the partitions of each log dir that fails, once their logs are closed:
// the replica manager answers the requests waiting on them.
func (m *Manager) OnDirFailure(fn func(dir string, partitions []TopicPartition)) {
	m.onDirFailure.Store(&fn)
}

// OnLogMoved sets fn to be called (on the mover's goroutine, with no lock
// held) after a log moved to another log dir (AlterLogDir), so that the
// broker reports the replica's new dir to the controller.
func (m *Manager) OnLogMoved(fn func(TopicPartition)) {
	m.onLogMoved.Store(&fn)
}

// OnDirOffline sets fn to be called (on a goroutine of the Manager's)
// once for each log dir that fails, after its logs are closed and the
// replica manager was told (OnDirFailure), with the dirs still online. The
// broker stops when none is left, or when the failed dir holds the
// metadata log (Kafka's LogManager.handleLogDirFailure and
// ReplicaManager.handleLogDirFailure halt the process then). A dir that
// failed before fn was set is not reported: see OfflineDirs.
func (m *Manager) OnDirOffline(fn func(dir string, online []string)) {
	m.onDirOffline.Store(&fn)
}

// OnlineDirs returns the log dirs that are online.
func (m *Manager) OnlineDirs() []string {
	var out []string
	for _, d := range m.dirs {
		if d.failed() == nil {
			out = append(out, d.path)
		}
	}
	return out
}

// OfflineDirs returns the log dirs that are offline.
func (m *Manager) OfflineDirs() []string {
	var out []string
	for _, d := range m.dirs {
		if d.failed() != nil {
			out = append(out, d.path)
		}
	}
	return out
}

// OfflineLogs returns the partitions whose logs are in an offline dir,
// with that dir (their logs are closed and no longer among Logs): the
// broker still reports where they are (KIP-858's AssignReplicasToDirs),
// so that the controller moves their leadership away.
func (m *Manager) OfflineLogs() map[TopicPartition]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return maps.Clone(m.offline)
}

// offlineErr returns why tp cannot be created or served here: its log is
// in an offline dir, or it may be (a dir that failed before its
// partitions could be listed is offline). Manager.mu held.
func (m *Manager) offlineErr(tp TopicPartition) error {
	if dir, ok := m.offline[tp]; ok {
		for _, d := range m.dirs {
			if d.path == dir {
				return fmt.Errorf("%w: the log of %s is in log dir %s, which is offline: %v", kerr.KafkaStorageError, tp, dir, d.failed())
			}
		}
	}
	for _, d := range m.dirs {
		if d.unlisted && d.failed() != nil {
			return fmt.Errorf("%w: cannot create the log of %s: log dir %s is offline and its partitions are unknown, so the log may be there: %v",
				kerr.KafkaStorageError, tp, d.path, d.failed())
		}
	}
	return nil
}
