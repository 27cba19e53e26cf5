package log

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// FaultOp is an operation FaultFS can fail.
type FaultOp int

// Operations FaultFS can fail.
const (
	OpWrite FaultOp = iota // Write and WriteAt
	OpSync                 // File.Sync and SyncDir
	OpOpen
	OpRename
	OpRemove
	OpTruncate
	OpRead    // File.ReadAt
	OpStat    // FS.Stat and File.Stat
	OpReadDir // FS.ReadDir
	OpMkdir   // FS.MkdirAll
	numFaultOps
)

// ErrInjected is the error FaultFS returns for an injected fault.
var ErrInjected = errors.New("injected fault")

// Fault arms one failure: the Nth operation Op (from the time it is
// armed, counting from 1) on a path containing PathContains fails with
// Err (ErrInjected if nil; a syscall.Errno such as EIO, EMFILE or ENOSPC
// to look like the OS). Short makes a failing write write half its bytes
// first, as a full disk can. Sticky keeps the fault armed once it fired:
// every later matching operation fails too, as on a dead disk, until
// Reset.
type Fault struct {
	Op           FaultOp
	PathContains string
	Nth          int
	Short        bool
	Sticky       bool
	Err          error
}

// FaultFS wraps an FS (the OS if Inner is nil) to inject failures, and
// models a crash: it remembers how much of each file was fsynced, and
// Crash truncates every file it wrote to that length, dropping un-synced
// appends. (The model covers appends, which is how the log writes; an
// un-synced overwrite inside the synced length is not reverted.)
type FaultFS struct {
	Inner FS

	mu     sync.Mutex
	faults []*Fault
	counts [numFaultOps]int
	synced map[string]int64 // path -> length at last Sync (files written through f)
	open   int              // files opened through f and not closed yet
}

// NewFaultFS returns a FaultFS over inner (nil: the OS).
func NewFaultFS(inner FS) *FaultFS {
	if inner == nil {
		inner = OSFS{}
	}
	return &FaultFS{Inner: inner, synced: make(map[string]int64)}
}

// Inject arms a fault.
func (f *FaultFS) Inject(ft Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft.Nth < 1 {
		ft.Nth = 1
	}
	f.faults = append(f.faults, &ft)
}

// Reset disarms every fault.
func (f *FaultFS) Reset() {
	f.mu.Lock()
	f.faults = nil
	f.mu.Unlock()
}

// Count returns how many operations op were attempted.
func (f *FaultFS) Count(op FaultOp) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

// OpenFiles returns how many files opened through f are not closed yet:
// a test of an error path checks it for leaked file descriptors.
func (f *FaultFS) OpenFiles() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open
}

// check counts an operation and returns the fault it triggers, if any.
func (f *FaultFS) check(op FaultOp, path string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[op]++
	for i, ft := range f.faults {
		if ft.Op != op || !strings.Contains(path, ft.PathContains) {
			continue
		}
		if ft.Nth > 0 {
			ft.Nth--
		}
		if ft.Nth == 0 {
			if !ft.Sticky {
				f.faults = append(f.faults[:i], f.faults[i+1:]...)
			}
			return ft
		}
	}
	return nil
}

func (ft *Fault) err(op, path string) error {
	e := ft.Err
	if e == nil {
		e = ErrInjected
	}
	return &os.PathError{Op: op, Path: path, Err: e}
}

// Crash drops the un-synced tail of every file written through f, as if
// the machine had lost power.
func (f *FaultFS) Crash() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for path, n := range f.synced {
		fl, err := f.Inner.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			if !os.IsNotExist(err) {
				errs = append(errs, err)
			}
			continue
		}
		if st, err := fl.Stat(); err == nil && st.Size() > n {
			if err := fl.Truncate(n); err != nil {
				errs = append(errs, err)
			}
		}
		fl.Close()
	}
	f.synced = make(map[string]int64)
	return errors.Join(errs...)
}

func (f *FaultFS) noteWrite(path string) {
	f.mu.Lock()
	if _, ok := f.synced[path]; !ok {
		f.synced[path] = 0
	}
	f.mu.Unlock()
}

func (f *FaultFS) noteSync(path string, fl File) {
	st, err := fl.Stat()
	if err != nil {
		return
	}
	f.mu.Lock()
	f.synced[path] = st.Size()
	f.mu.Unlock()
}

// OpenFile implements FS.
func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if ft := f.check(OpOpen, name); ft != nil {
		return nil, ft.err("open", name)
	}
	fl, err := f.Inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.open++
	f.mu.Unlock()
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		if st, err := fl.Stat(); err == nil {
			f.mu.Lock()
			if _, ok := f.synced[name]; !ok {
				f.synced[name] = st.Size()
			}
			if flag&os.O_TRUNC != 0 {
				f.synced[name] = 0
			}
			f.mu.Unlock()
		}
	}
	return &faultFile{File: fl, fs: f, name: name}, nil
}

// Rename implements FS.
func (f *FaultFS) Rename(oldpath, newpath string) error {
	if ft := f.check(OpRename, oldpath); ft != nil {
		return ft.err("rename", oldpath)
	}
	if err := f.Inner.Rename(oldpath, newpath); err != nil {
		return err
	}
	f.mu.Lock()
	for p, n := range f.synced {
		if p == oldpath || strings.HasPrefix(p, oldpath+string(os.PathSeparator)) {
			delete(f.synced, p)
			f.synced[newpath+p[len(oldpath):]] = n
		}
	}
	f.mu.Unlock()
	return nil
}

// Remove implements FS.
func (f *FaultFS) Remove(name string) error {
	if ft := f.check(OpRemove, name); ft != nil {
		return ft.err("remove", name)
	}
	f.mu.Lock()
	delete(f.synced, name)
	f.mu.Unlock()
	return f.Inner.Remove(name)
}

// RemoveAll implements FS.
func (f *FaultFS) RemoveAll(path string) error {
	if ft := f.check(OpRemove, path); ft != nil {
		return ft.err("removeall", path)
	}
	f.mu.Lock()
	for p := range f.synced {
		if p == path || strings.HasPrefix(p, path+string(os.PathSeparator)) {
			delete(f.synced, p)
		}
	}
	f.mu.Unlock()
	return f.Inner.RemoveAll(path)
}

// MkdirAll implements FS.
func (f *FaultFS) MkdirAll(path string, perm os.FileMode) error {
	if ft := f.check(OpMkdir, path); ft != nil {
		return ft.err("mkdir", path)
	}
	return f.Inner.MkdirAll(path, perm)
}

// ReadDir implements FS.
func (f *FaultFS) ReadDir(name string) ([]os.DirEntry, error) {
	if ft := f.check(OpReadDir, name); ft != nil {
		return nil, ft.err("readdirent", name)
	}
	return f.Inner.ReadDir(name)
}

// Stat implements FS.
func (f *FaultFS) Stat(name string) (os.FileInfo, error) {
	if ft := f.check(OpStat, name); ft != nil {
		return nil, ft.err("stat", name)
	}
	return f.Inner.Stat(name)
}

// SyncDir implements FS.
func (f *FaultFS) SyncDir(path string) error {
	if ft := f.check(OpSync, path); ft != nil {
		return ft.err("syncdir", path)
	}
	return f.Inner.SyncDir(path)
}

type faultFile struct {
	File
	fs     *FaultFS
	name   string
	closed bool // under fs.mu
}

func (ff *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if ft := ff.fs.check(OpRead, ff.name); ft != nil {
		return 0, ft.err("read", ff.name)
	}
	return ff.File.ReadAt(p, off)
}

func (ff *faultFile) Stat() (os.FileInfo, error) {
	if ft := ff.fs.check(OpStat, ff.name); ft != nil {
		return nil, ft.err("stat", ff.name)
	}
	return ff.File.Stat()
}

func (ff *faultFile) Close() error {
	ff.fs.mu.Lock()
	if !ff.closed {
		ff.closed = true
		ff.fs.open--
	}
	ff.fs.mu.Unlock()
	return ff.File.Close()
}

func (ff *faultFile) write(p []byte, at func([]byte) (int, error)) (int, error) {
	ff.fs.noteWrite(ff.name)
	if ft := ff.fs.check(OpWrite, ff.name); ft != nil {
		n := 0
		if ft.Short && len(p) > 1 {
			n, _ = at(p[:len(p)/2])
		}
		return n, ft.err("write", ff.name)
	}
	return at(p)
}

func (ff *faultFile) WriteAt(p []byte, off int64) (int, error) {
	return ff.write(p, func(b []byte) (int, error) { return ff.File.WriteAt(b, off) })
}

func (ff *faultFile) Write(p []byte) (int, error) {
	return ff.write(p, ff.File.Write)
}

func (ff *faultFile) Sync() error {
	if ft := ff.fs.check(OpSync, ff.name); ft != nil {
		return ft.err("sync", ff.name)
	}
	if err := ff.File.Sync(); err != nil {
		return err
	}
	ff.fs.noteSync(ff.name, ff.File)
	return nil
}

func (ff *faultFile) Truncate(size int64) error {
	if ft := ff.fs.check(OpTruncate, ff.name); ft != nil {
		return ft.err("truncate", ff.name)
	}
	ff.fs.noteWrite(ff.name)
	if err := ff.File.Truncate(size); err != nil {
		return err
	}
	ff.fs.mu.Lock()
	if n, ok := ff.fs.synced[ff.name]; ok && n > size {
		ff.fs.synced[ff.name] = size
	}
	ff.fs.mu.Unlock()
	return nil
}

func (ff *faultFile) String() string { return fmt.Sprintf("faultFile(%s)", ff.name) }
