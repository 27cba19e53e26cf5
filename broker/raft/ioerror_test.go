package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moldau/moldau/log"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Every I/O error of the metadata log stops the node cleanly: whatever
// operation fails (a write or fsync of the log, a new segment, a read of
// committed batches, quorum-state, a snapshot), the node stops with an
// error that wraps the cause and names the file, logs it once at ERROR,
// answers later appends with it, and nothing panics (a panic of etcd raft
// would be logged as "raft panicked" with its stack).
func TestIOErrorsStopTheNodeCleanly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault log.Fault
		tweak func(*Config)
		file  string // the error names a file whose name contains this
	}{
		{name: "log write", fault: log.Fault{Op: log.OpWrite, PathContains: ".log"}, file: ".log"},
		{name: "log fsync", fault: log.Fault{Op: log.OpSync, PathContains: ".log"}, file: ".log"},
		{name: "log read", fault: log.Fault{Op: log.OpRead, PathContains: ".log"}, file: ".log"},
		{name: "new segment", fault: log.Fault{Op: log.OpOpen, PathContains: ".log", Sticky: true}, file: ".log",
			tweak: func(c *Config) { c.SegmentBytes = 1 << 10 }},
		{name: "snapshot write", fault: log.Fault{Op: log.OpWrite, PathContains: partialSnapshotSuffix}, file: partialSnapshotSuffix,
			tweak: func(c *Config) { c.MaxBytesBetweenSnapshots = 1 << 10 }},
		{name: "snapshot fsync", fault: log.Fault{Op: log.OpSync, PathContains: partialSnapshotSuffix}, file: partialSnapshotSuffix,
			tweak: func(c *Config) { c.MaxBytesBetweenSnapshots = 1 << 10 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ffs := log.NewFaultFS(nil)
			out := &lockedBuffer{}
			c := newCluster(t, 1, func(cfg *Config) {
				cfg.FS = ffs
				cfg.Logger = slog.New(slog.NewTextHandler(out, nil))
				if tc.tweak != nil {
					tc.tweak(cfg)
				}
			})
			_, epoch := c.leader(2 * time.Second)
			appendAndCommit(t, c.nodes[1], epoch, "before")
			n := c.nodes[1]
			ffs.Inject(tc.fault)
			for i := 0; ; i++ {
				off, err := n.ScheduleAppend(epoch, [][]byte{[]byte(fmt.Sprintf("%s-%d", strings.Repeat("x", 100), i))})
				if err == nil {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					err = n.WaitForCommit(ctx, epoch, off)
					cancel()
				}
				if err != nil {
					break
				}
				if i == 1000 {
					t.Fatal("appends with a failing disk kept succeeding")
				}
			}
			err := waitStopped(t, n)
			checkIOStop(t, err, tc.file, out.String())
			if _, err := n.ScheduleAppend(epoch, [][]byte{[]byte("after")}); !errors.Is(err, log.ErrInjected) {
				t.Fatalf("append after the stop: %v, want the I/O error", err)
			}
		})
	}
	t.Run("quorum state write", func(t *testing.T) {
		ffs := log.NewFaultFS(nil)
		out := &lockedBuffer{}
		c := newCluster(t, 1, func(cfg *Config) {
			cfg.FS = ffs
			cfg.Logger = slog.New(slog.NewTextHandler(out, nil))
		})
		c.leader(2 * time.Second)
		c.stop(1)
		// Written when the restarted node elects itself, at Open.
		ffs.Inject(log.Fault{Op: log.OpSync, PathContains: quorumStateFile})
		n, err := Open(c.config(1), &testSM{})
		if err != nil {
			t.Fatalf("Open: %v (quorum-state is written by the raft goroutine)", err)
		}
		defer n.Close()
		checkIOStop(t, waitStopped(t, n), quorumStateFile, out.String())
	})
}

// checkIOStop checks how a node stopped on an injected I/O error.
func checkIOStop(t *testing.T, err error, file, logs string) {
	t.Helper()
	if !errors.Is(err, log.ErrInjected) {
		t.Fatalf("stopped with %v, want the injected I/O error", err)
	}
	if !strings.Contains(err.Error(), MetadataTopicPartition.String()) || !strings.Contains(err.Error(), file) {
		t.Errorf("the error does not name the file (%s): %v", file, err)
	}
	if strings.Contains(logs, "raft panicked") || strings.Contains(logs, "goroutine ") {
		t.Errorf("raft panicked on an I/O error:\n%s", logs)
	}
	var lines []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, "injected fault") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Errorf("no ERROR line names the fault:\n%s", logs)
	}
	t.Logf("stopped with: %v", err)
}
