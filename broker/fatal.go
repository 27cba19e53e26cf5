package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/moldau/moldau/broker/raft"
)

// Fatal errors (Kafka's Exit.halt after a fatal log line).
//
// Some failures leave a node that must not go on: every log dir failed
// (LogManager.handleLogDirFailure: "Shutdown broker because all log dirs
// in ... have failed"), the log dir holding the metadata log failed
// (ReplicaManager.handleLogDirFailure: "Shutdown broker because the
// metadata log dir ... has failed"), or the metadata quorum stopped on an
// I/O error of its log, snapshots or quorum-state (KafkaRaftClient's fault
// handler). Kafka halts the JVM there. A Broker instead logs one ERROR
// line saying why, closes Fatal() and shuts itself down at once, with no
// controlled shutdown (the controller learns of it as of a halted broker,
// when its session expires). The process that owns it decides what
// follows: `moldau serve` exits with status 1, a test process lives on.

// FatalError says why a broker stopped on its own.
type FatalError struct {
	Reason string // Kafka's wording: "all log dirs in a, b have failed"
	Err    error  // the cause, if any
}

func (e *FatalError) Error() string {
	if e.Err == nil {
		return e.Reason
	}
	return e.Reason + ": " + e.Err.Error()
}

func (e *FatalError) Unwrap() error { return e.Err }

// Fatal returns a channel closed when the broker hits a fatal error and
// begins to shut itself down; FatalErr then says why. Close still waits
// for the shutdown to finish.
func (b *Broker) Fatal() <-chan struct{} { return b.fatal }

// FatalErr returns the fatal error that stopped the broker, or nil.
func (b *Broker) FatalErr() error {
	if e := b.fatalErr.Load(); e != nil {
		return e
	}
	return nil
}

// halt stops the broker on a fatal error (once): one ERROR line, Fatal()
// closed, and Close run in the background, since halt is called from
// goroutines Close waits for (the log Manager's, the quorum watcher). The
// goroutine ends when Close does; an owner's Close waits for the same
// shutdown (closeOnce).
func (b *Broker) halt(e *FatalError) {
	if !b.fatalErr.CompareAndSwap(nil, e) {
		return
	}
	b.halting.Store(true)
	attrs := []any{"reason", e.Reason}
	if e.Err != nil {
		attrs = append(attrs, "err", e.Err)
	}
	b.log.Error("fatal error: shutting down the broker", attrs...)
	close(b.fatal)
	go b.Close()
}

// onLogDirOffline is the log Manager's report of a failed log dir: the
// broker stops if none is left or if it held the metadata log.
func (b *Broker) onLogDirOffline(dir string, online []string) {
	if e := b.logDirsFatal(online, []string{dir}); e != nil {
		b.halt(e)
		return
	}
	if l := b.lifecycleRef.Load(); l != nil {
		l.propagateDirectoryFailure()
	}
}

// logDirsFatal returns the fatal error that offline log dirs are, given
// the dirs still online, or nil.
func (b *Broker) logDirsFatal(online, offline []string) *FatalError {
	if len(online) == 0 {
		return &FatalError{Reason: fmt.Sprintf("all log dirs in %s have failed", strings.Join(b.cfg.LogDirs, ", "))}
	}
	for _, d := range offline {
		if sameDir(d, b.cfg.MetadataLogDir) {
			return &FatalError{Reason: fmt.Sprintf("the metadata log dir %s has failed", d)}
		}
	}
	return nil
}

// watchQuorum stops the broker if the metadata quorum node stops on an
// error rather than by Close.
func (b *Broker) watchQuorum(done <-chan struct{}) {
	select {
	case <-b.quorum.node.Done():
	case <-done:
		return
	}
	if err := b.quorum.node.Err(); err != nil && !errors.Is(err, raft.ErrClosed) {
		b.halt(&FatalError{Reason: "the metadata quorum stopped", Err: err})
	}
}

func sameDir(a, b string) bool {
	if x, err := filepath.Abs(a); err == nil {
		a = x
	}
	if x, err := filepath.Abs(b); err == nil {
		b = x
	}
	return filepath.Clean(a) == filepath.Clean(b)
}
