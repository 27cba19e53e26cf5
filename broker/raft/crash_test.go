package raft

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moldau/moldau/log"
)

// waitStopped waits for a node to stop on its own and returns its error.
func waitStopped(t *testing.T, n *Node) error {
	t.Helper()
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not stop")
	}
	err := n.Err()
	if err == nil || errors.Is(err, ErrClosed) {
		t.Fatalf("stopped with %v, want an I/O error", err)
	}
	return err
}

func TestTornTailIsTruncatedAndNodeRejoins(t *testing.T) {
	ffs := map[int32]*log.FaultFS{1: log.NewFaultFS(nil), 2: log.NewFaultFS(nil), 3: log.NewFaultFS(nil)}
	c := newCluster(t, 3, func(cfg *Config) { cfg.FS = ffs[cfg.NodeID] })
	lid, epoch := c.leader(10 * time.Second)
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("r%d", i))
		appendAndCommit(t, c.nodes[lid], epoch, want[i])
	}
	c.waitState(want)
	var f int32
	for id := range c.nodes {
		if id != lid {
			f = id
			break
		}
	}
	// The follower's next append writes half a batch, and the cleanup of
	// those bytes fails too: a torn tail stays on disk, as after kill -9
	// in the middle of a write.
	ffs[f].Inject(log.Fault{Op: log.OpWrite, PathContains: ".log", Short: true})
	ffs[f].Inject(log.Fault{Op: log.OpTruncate, PathContains: ".log"})
	appendAndCommit(t, c.nodes[lid], epoch, strings.Repeat("torn", 100))
	want = append(want, strings.Repeat("torn", 100))
	err := waitStopped(t, c.nodes[f])
	t.Logf("follower %d stopped: %v", f, err)
	segs, _ := filepath.Glob(filepath.Join(c.dirs[f], "__cluster_metadata-0", "*.log"))
	last := segs[len(segs)-1]
	if torn := tornBytes(t, last); torn == 0 {
		t.Fatal("no torn tail on disk")
	}
	c.stop(f)
	ffs[f].Reset()
	c.start(f)
	c.waitState(want)
	for i := range 5 {
		r := fmt.Sprintf("after%d", i)
		appendAndCommit(t, c.nodes[lid], epoch, r)
		want = append(want, r)
	}
	c.waitState(want)
	if err := c.nodes[f].Err(); err != nil {
		t.Fatal(err)
	}
	c.stop(f)
	if torn := tornBytes(t, last); torn != 0 {
		t.Fatalf("%d torn bytes left after recovery", torn)
	}
}

// tornBytes returns how many bytes at the end of a segment file do not
// make a whole batch.
func tornBytes(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := splitBatches(b, func([]byte, log.BatchHeader) error { return nil })
	if err != nil {
		return len(b)
	}
	return len(rest)
}

func TestCrashDuringSnapshotWriteKeepsPreviousSnapshot(t *testing.T) {
	ffs := log.NewFaultFS(nil)
	c := newCluster(t, 1, func(cfg *Config) {
		cfg.FS = ffs
		cfg.MaxBytesBetweenSnapshots = 2 << 10
	})
	_, epoch := c.leader(2 * time.Second)
	dir := filepath.Join(c.dirs[1], "__cluster_metadata-0")
	var want []string
	for len(want) < 200 {
		r := fmt.Sprintf("%s-%d", strings.Repeat("x", 50), len(want))
		appendAndCommit(t, c.nodes[1], epoch, r)
		want = append(want, r)
		if ids, _ := listSnapshots(log.OSFS{}, dir); len(ids) > 0 {
			break
		}
	}
	c.waitState(want)
	waitFor(t, 5*time.Second, "a first snapshot", func() bool {
		ids, _ := listSnapshots(log.OSFS{}, dir)
		return len(ids) == 1
	})
	first, _ := listSnapshots(log.OSFS{}, dir)

	// The next snapshot's write fails half-way and its .part file cannot
	// be removed: the machine "crashes" with a partial snapshot on disk.
	ffs.Inject(log.Fault{Op: log.OpWrite, PathContains: partialSnapshotSuffix, Short: true})
	ffs.Inject(log.Fault{Op: log.OpRemove, PathContains: partialSnapshotSuffix})
	var failed []string
	for {
		r := fmt.Sprintf("%s-%d", strings.Repeat("y", 50), len(want)+len(failed))
		off, err := c.nodes[1].ScheduleAppend(epoch, [][]byte{[]byte(r)})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = c.nodes[1].WaitForCommit(ctx, epoch, off)
			cancel()
		}
		if err != nil {
			failed = append(failed, r)
			break
		}
		want = append(want, r)
	}
	err := waitStopped(t, c.nodes[1])
	if !errors.Is(err, log.ErrInjected) {
		t.Fatalf("stopped with %v", err)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "*"+partialSnapshotSuffix))
	if len(parts) != 1 {
		t.Fatalf("partial snapshot files %v", parts)
	}
	c.stop(1)
	if err := ffs.Crash(); err != nil {
		t.Fatal(err)
	}
	ffs.Reset()
	c.start(1)
	c.leader(2 * time.Second)
	sm := c.sms[1]
	waitFor(t, 5*time.Second, "the state to be replayed", func() bool {
		got, _ := sm.state()
		return len(got) >= len(want) && slices.Equal(got[:len(want)], want)
	})
	sm.mu.Lock()
	loaded := slices.Clone(sm.snapshots)
	sm.mu.Unlock()
	if len(loaded) != 1 || loaded[0] != first[0] {
		t.Fatalf("loaded %v, want the previous snapshot %v", loaded, first)
	}
	if parts, _ := filepath.Glob(filepath.Join(dir, "*"+partialSnapshotSuffix)); len(parts) != 0 {
		t.Fatalf("partial snapshot left after restart: %v", parts)
	}
}

func TestIOErrorsStopTheNode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault log.Fault
	}{
		{"log write", log.Fault{Op: log.OpWrite, PathContains: ".log"}},
		{"log short write", log.Fault{Op: log.OpWrite, PathContains: ".log", Short: true}},
		{"log fsync", log.Fault{Op: log.OpSync, PathContains: ".log"}},
		{"quorum-state write", log.Fault{Op: log.OpRename, PathContains: "quorum-state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ffs := log.NewFaultFS(nil)
			c := newCluster(t, 1, func(cfg *Config) { cfg.FS = ffs })
			_, epoch := c.leader(2 * time.Second)
			appendAndCommit(t, c.nodes[1], epoch, "before")
			ffs.Inject(tc.fault)
			n := c.nodes[1]
			if tc.fault.PathContains == "quorum-state" {
				// Written on the next election: restart the node.
				c.stop(1)
				ffs.Inject(tc.fault)
				n2, err := Open(c.config(1), &testSM{})
				if err != nil {
					t.Fatal(err)
				}
				defer n2.Close()
				t.Logf("stopped with: %v", waitStopped(t, n2))
				return
			}
			off, err := n.ScheduleAppend(epoch, [][]byte{[]byte("doomed")})
			if err == nil {
				err = n.WaitForCommit(context.Background(), epoch, off)
			}
			if err == nil {
				t.Fatal("append with a failing disk succeeded")
			}
			t.Logf("stopped with: %v", waitStopped(t, n))
			if _, err := n.ScheduleAppend(epoch, [][]byte{[]byte("after")}); err == nil {
				t.Fatal("a stopped node took an append")
			}
		})
	}
}

// A leader killed in the middle of a burst of appends, its un-fsynced
// writes lost (FaultFS.Crash), loses nothing that was committed: after a
// new election and its restart, every node holds every committed record
// once, in order.
func TestCrashedLeaderLosesNothingCommitted(t *testing.T) {
	ffs := map[int32]*log.FaultFS{1: log.NewFaultFS(nil), 2: log.NewFaultFS(nil), 3: log.NewFaultFS(nil)}
	c := newCluster(t, 3, func(cfg *Config) { cfg.FS = ffs[cfg.NodeID] })
	var committed []string
	burst := func(lid, epoch int32, k int, stop func(i int)) {
		n := c.nodes[lid]
		for i := range k {
			r := fmt.Sprintf("e%d-%d", epoch, i)
			off, err := n.ScheduleAppend(epoch, [][]byte{[]byte(r)})
			if stop != nil {
				stop(i)
			}
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err = n.WaitForCommit(ctx, epoch, off)
				cancel()
			}
			if err == nil {
				committed = append(committed, r)
			}
		}
	}
	lid, epoch := c.leader(10 * time.Second)
	burst(lid, epoch, 50, func(i int) {
		if i == 30 {
			c.stop(lid) // the burst goes on against a dead node: those fail
			if err := ffs[lid].Crash(); err != nil {
				t.Error(err)
			}
		}
	})
	nlid, nepoch := c.leader(10 * time.Second)
	burst(nlid, nepoch, 20, nil)
	c.start(lid)
	for id := range c.nodes {
		sm := c.sms[id]
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to hold every committed record", id), func() bool {
			got, _ := sm.state()
			return isSubsequence(committed, got)
		})
		got, _ := sm.state()
		seen := map[string]bool{}
		for _, r := range got {
			if seen[r] {
				t.Fatalf("node %d applied %s twice", id, r)
			}
			seen[r] = true
		}
	}
	if len(committed) < 50 {
		t.Fatalf("only %d appends committed", len(committed))
	}
}

// isSubsequence reports whether every element of sub appears in s in the
// same order.
func isSubsequence(sub, s []string) bool {
	i := 0
	for _, x := range s {
		if i < len(sub) && sub[i] == x {
			i++
		}
	}
	return i == len(sub)
}
