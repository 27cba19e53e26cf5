package log

import (
	"os"
	"sync/atomic"
	"time"
)

// DelayFS wraps an FS (the OS if Inner is nil) to model a slow disk:
// every write (Write, WriteAt, Truncate) and every fsync (File.Sync,
// SyncDir) waits the delay set with SetDelay before it runs. Reads, opens,
// renames and directory listings are not delayed, and a file keeps its
// *os.File (OSFile), so fetches still go by sendfile from the page cache.
//
// It is what `moldau dev slow` uses (cmd/moldau serve wraps log.dirs in
// one only when the dev process asks for it); a broker run otherwise uses
// OSFS directly, so production pays nothing for it. The delay is read
// with one atomic load per operation and may change at any time; an
// operation already waiting keeps the delay it read.
type DelayFS struct {
	Inner FS
	delay atomic.Int64 // nanoseconds
}

// NewDelayFS wraps inner (nil: the OS) with no delay.
func NewDelayFS(inner FS) *DelayFS {
	if inner == nil {
		inner = OSFS{}
	}
	return &DelayFS{Inner: inner}
}

// SetDelay sets the delay of every later write and fsync (0: none).
func (d *DelayFS) SetDelay(delay time.Duration) { d.delay.Store(int64(max(delay, 0))) }

// Delay is the current delay.
func (d *DelayFS) Delay() time.Duration { return time.Duration(d.delay.Load()) }

func (d *DelayFS) wait() {
	if n := d.delay.Load(); n > 0 {
		time.Sleep(time.Duration(n))
	}
}

// OpenFile implements FS.
func (d *DelayFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := d.Inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &delayFile{File: f, fs: d}, nil
}

// Rename implements FS.
func (d *DelayFS) Rename(oldpath, newpath string) error { return d.Inner.Rename(oldpath, newpath) }

// Remove implements FS.
func (d *DelayFS) Remove(name string) error { return d.Inner.Remove(name) }

// RemoveAll implements FS.
func (d *DelayFS) RemoveAll(path string) error { return d.Inner.RemoveAll(path) }

// MkdirAll implements FS.
func (d *DelayFS) MkdirAll(path string, perm os.FileMode) error { return d.Inner.MkdirAll(path, perm) }

// ReadDir implements FS.
func (d *DelayFS) ReadDir(name string) ([]os.DirEntry, error) { return d.Inner.ReadDir(name) }

// Stat implements FS.
func (d *DelayFS) Stat(name string) (os.FileInfo, error) { return d.Inner.Stat(name) }

// SyncDir implements FS.
func (d *DelayFS) SyncDir(path string) error {
	d.wait()
	return d.Inner.SyncDir(path)
}

type delayFile struct {
	File
	fs *DelayFS
}

func (f *delayFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.wait()
	return f.File.WriteAt(p, off)
}

func (f *delayFile) Write(p []byte) (int, error) {
	f.fs.wait()
	return f.File.Write(p)
}

func (f *delayFile) Truncate(size int64) error {
	f.fs.wait()
	return f.File.Truncate(size)
}

func (f *delayFile) Sync() error {
	f.fs.wait()
	return f.File.Sync()
}
