package raft

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/moldau/moldau/log"
)

// Listener receives the committed metadata log (Kafka's
// RaftClient.Listener). Its methods are called in order from one goroutine
// of the node, never concurrently; they may call the Node (ScheduleAppend
// included) but must return, or Close waits for them.
type Listener interface {
	// HandleCommit hands over committed batches, in offset order, each
	// whole. Control batches (Control set, no Records) come too, so the
	// listener sees every committed offset.
	HandleCommit(batches []Batch)
	// HandleLoadSnapshot replaces the state with a snapshot: at start-up
	// (the newest snapshot on disk) and when a follower gets one from the
	// leader. Commits after it continue from its end offset.
	HandleLoadSnapshot(r *SnapshotReader)
	// HandleLeaderChange reports a new leader or epoch. When this node
	// becomes the leader, it is called only once the listener has seen
	// every batch up to and including the new epoch's LeaderChange batch,
	// so the state is complete before the first append (as Kafka does).
	HandleLeaderChange(leader LeaderAndEpoch)
}

// StateMachine is a Listener that can also write its state as a snapshot.
type StateMachine interface {
	Listener
	// WriteSnapshot appends the records of the state as of the last batch
	// HandleCommit delivered (offset w.SnapshotID().Offset-1) to w. It is
	// called on the listener goroutine, between HandleCommit calls, once
	// MaxBytesBetweenSnapshots of batches were committed since the last
	// snapshot. An error abandons the snapshot and stops the node.
	WriteSnapshot(w *SnapshotWriter) error
}

// snapshotBatchBytes is the size of the batches inside a snapshot.
const snapshotBatchBytes = 128 << 10

// applier is the listener goroutine: it reads committed batches from the
// log up to the high watermark the raft goroutine hands it and calls the
// state machine. Reading the log (not raft's CommittedEntries) keeps the
// raft goroutine from ever waiting for the state machine, and bounds
// memory whatever the backlog.
type applier struct {
	n  *Node
	sm StateMachine

	mu     sync.Mutex
	wake   chan struct{}
	hw     int64  // deliver batches below this offset
	hwIdx  uint64 // raft index of the batch ending at hw-1
	snap   *loadedSnapshot
	leader *pendingLeader

	// Listener goroutine only.
	next       int64  // next offset to deliver
	lastIndex  uint64 // raft index of the last batch delivered (one batch, one index)
	lastEpoch  int32
	lastTs     int64
	sinceSnap  int64     // bytes delivered since the last snapshot
	snapOffset int64     // end offset of the last snapshot loaded or written
	snapAt     time.Time // when the last snapshot was loaded or written (or the node opened)
	// voters is the newest VotersRecord delivered (or in the snapshot
	// loaded), nil while there is none (kraft.version 0): snapshots
	// carry it after their header, as Kafka's do.
	voters VoterSet
}

type pendingLeader struct {
	le    LeaderAndEpoch
	after int64 // fire once the batch at this offset was delivered (-1: now)
}

func newApplier(n *Node, sm StateMachine, snap *loadedSnapshot) *applier {
	a := &applier{n: n, sm: sm, wake: make(chan struct{}, 1), snap: snap, next: n.ml.l.LogStartOffset(), snapAt: n.cfg.Now()}
	if snap != nil {
		a.hw, a.hwIdx = snap.id.Offset, snap.hdr.LastContainedRaftIndex
		a.wake <- struct{}{}
	}
	return a
}

func (a *applier) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// commitTo moves the target to hw (raft goroutine).
func (a *applier) commitTo(hw int64, index uint64) {
	a.mu.Lock()
	if hw > a.hw {
		a.hw, a.hwIdx = hw, index
	}
	a.mu.Unlock()
	a.poke()
}

// loadSnapshot queues a snapshot to load before any further batch.
func (a *applier) loadSnapshot(s *loadedSnapshot) {
	a.mu.Lock()
	a.snap = s
	if s.id.Offset > a.hw {
		a.hw, a.hwIdx = s.id.Offset, s.hdr.LastContainedRaftIndex
	}
	a.mu.Unlock()
	a.poke()
}

// leaderChange queues a leader change; only the newest is kept.
func (a *applier) leaderChange(le LeaderAndEpoch, after int64) {
	a.mu.Lock()
	a.leader = &pendingLeader{le: le, after: after}
	a.mu.Unlock()
	a.poke()
}

func (a *applier) run(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-a.wake:
		}
		for {
			select {
			case <-done:
				return
			default:
			}
			worked, err := a.step()
			if err != nil {
				a.n.fail(err)
				return
			}
			if !worked {
				break
			}
		}
	}
}

// step does one piece of work; it reports whether there was any.
func (a *applier) step() (bool, error) {
	a.mu.Lock()
	snap, hw, hwIdx, ld := a.snap, a.hw, a.hwIdx, a.leader
	a.snap = nil
	a.mu.Unlock()
	if snap != nil {
		r, err := newSnapshotReader(snap.id, snap.data)
		if err != nil {
			return false, err
		}
		a.sm.HandleLoadSnapshot(r)
		a.voters = nil
		if set, ok := snapshotVoters(snap.data); ok {
			a.voters = set
		}
		a.next, a.snapOffset, a.sinceSnap, a.snapAt = snap.id.Offset, snap.id.Offset, 0, a.n.cfg.Now()
		a.lastIndex = snap.hdr.LastContainedRaftIndex
		a.lastEpoch, a.lastTs = snap.id.Epoch, snap.hdr.LastContainedLogTimestamp
		return true, nil
	}
	if a.next < hw {
		if err := a.deliver(hw); err != nil {
			a.mu.Lock()
			pending := a.snap != nil
			a.mu.Unlock()
			if pending {
				return true, nil // the leader's snapshot replaced the log under us
			}
			return false, err
		}
		if a.next == hw && a.lastIndex != hwIdx {
			return false, fmt.Errorf("raft: delivered %d batches to offset %d, the leader counts %d", a.lastIndex, hw, hwIdx)
		}
		if a.snapshotDue() {
			return true, a.writeSnapshot()
		}
		return true, nil
	}
	if ld != nil && ld.after < a.next {
		a.mu.Lock()
		if a.leader == ld {
			a.leader = nil
		}
		a.mu.Unlock()
		a.sm.HandleLeaderChange(ld.le)
		return true, nil
	}
	return false, nil
}

// deliver reads one chunk of committed batches and hands them over.
func (a *applier) deliver(hw int64) error {
	fd, err := a.n.ml.l.Read(a.next, readChunk, hw, true)
	var chunk []byte
	if err == nil {
		chunk, err = fd.Records.ReadInto(nil)
	}
	if err == nil && len(chunk) == 0 {
		err = fmt.Errorf("no batch at offset %d below the high watermark %d", a.next, hw)
	}
	if err != nil {
		return fmt.Errorf("raft: reading committed batches: %w", err)
	}
	var batches []Batch
	if _, err := splitBatches(chunk, func(b []byte, h log.BatchHeader) error {
		if h.LastOffset() < a.next {
			return nil
		}
		batch, _, err := decodeBatch(b)
		if err != nil {
			return err
		}
		batches = append(batches, batch)
		return nil
	}); err != nil {
		return fmt.Errorf("raft: decoding committed batches at %d: %w", a.next, err)
	}
	if len(batches) == 0 {
		return fmt.Errorf("raft: no whole batch at offset %d", a.next)
	}
	a.sm.HandleCommit(batches)
	last := batches[len(batches)-1]
	a.next, a.lastEpoch, a.lastTs = last.LastOffset+1, last.Epoch, last.AppendTimestamp
	a.lastIndex += uint64(len(batches))
	for _, b := range batches {
		a.sinceSnap += int64(b.SizeInBytes)
		if b.voters != nil {
			a.voters = b.voters
		}
	}
	return nil
}

// snapshotDue reports whether enough was committed since the last
// snapshot to take one: MaxBytesBetweenSnapshots of batches, or anything
// once MaxIntervalBetweenSnapshots has passed (Kafka's SnapshotGenerator
// checks both the same way).
func (a *applier) snapshotDue() bool {
	if a.sinceSnap >= a.n.cfg.MaxBytesBetweenSnapshots {
		return true
	}
	iv := a.n.cfg.MaxIntervalBetweenSnapshots
	return iv > 0 && a.sinceSnap > 0 && a.n.cfg.Now().Sub(a.snapAt) >= iv
}

// writeSnapshot asks the state machine for a snapshot at the current
// offset, writes it durably and tells the raft goroutine.
func (a *applier) writeSnapshot() error {
	index := a.lastIndex
	id := OffsetAndEpoch{Offset: a.next, Epoch: a.lastEpoch}
	w, err := newSnapshotWriter(a.n.cfg.FS, a.n.ml.dir, id,
		snapshotHeader{LastContainedLogTimestamp: a.lastTs, LastContainedRaftIndex: index, EndOffset: id.Offset}, snapshotBatchBytes, a.voters)
	if err != nil {
		return fmt.Errorf("raft: creating snapshot %s: %w", id, err)
	}
	if err := a.sm.WriteSnapshot(w); err != nil {
		w.abort()
		return fmt.Errorf("raft: the state machine failed to write snapshot %s: %w", id, err)
	}
	size, err := w.freeze()
	if err != nil {
		return fmt.Errorf("raft: writing snapshot %s: %w", id, err)
	}
	a.n.logger.Info("wrote snapshot", "snapshot", id.String(), "index", index, "bytes", size)
	a.sinceSnap, a.snapOffset, a.snapAt = 0, id.Offset, a.n.cfg.Now()
	a.n.snapshotCreated(id, index)
	return nil
}

// commitWaiter is one WaitForCommit call.
type commitWaiter struct {
	epoch  int32
	offset int64
	done   chan error // buffered 1
}

// WaitForCommit waits until the batch holding offset, appended by this
// node as leader of epoch (ScheduleAppend), is committed: the high
// watermark passed it while this node still led epoch. It fails with a
// *NotLeaderError as soon as this node stops leading epoch first (the
// batch may still commit under the next leader, or be dropped:
// HandleCommit tells), with the node's error once it stops, or with
// ctx's error.
func (n *Node) WaitForCommit(ctx context.Context, epoch int32, offset int64) error {
	w := &commitWaiter{epoch: epoch, offset: offset, done: make(chan error, 1)}
	n.mu.Lock()
	switch {
	case n.err != nil:
		err := n.err
		n.mu.Unlock()
		return err
	case n.st.epoch == epoch && offset < n.st.hw:
		// Committed in the epoch (a leader that removed itself has
		// stepped down in the same epoch: its batches stay committed).
		n.mu.Unlock()
		return nil
	case n.st.epoch != epoch || n.st.leader != n.cfg.NodeID:
		err := &NotLeaderError{LeaderID: n.st.leader, Epoch: n.st.epoch, Asked: epoch}
		n.mu.Unlock()
		return err
	}
	n.waiters = append(n.waiters, w)
	n.mu.Unlock()
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		n.mu.Lock()
		for i, x := range n.waiters {
			if x == w {
				n.waiters = append(n.waiters[:i], n.waiters[i+1:]...)
				break
			}
		}
		n.mu.Unlock()
		return ctx.Err()
	}
}

// resolveWaiters completes the waiters whose offsets are committed and
// fails those whose epoch this node no longer leads.
func (n *Node) resolveWaiters(hw int64, epoch int32, isLeader bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.waiters) == 0 {
		return
	}
	kept := n.waiters[:0]
	for _, w := range n.waiters {
		switch {
		case w.epoch == epoch && w.offset < hw:
			w.done <- nil
		case w.epoch != epoch || !isLeader:
			w.done <- &NotLeaderError{LeaderID: n.st.leader, Epoch: epoch, Asked: w.epoch}
		default:
			kept = append(kept, w)
		}
	}
	clear(n.waiters[len(kept):])
	n.waiters = kept
}

// failWaiters fails every waiter with err.
func (n *Node) failWaiters(err error) {
	if err == nil {
		err = ErrClosed
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, w := range n.waiters {
		w.done <- err
	}
	n.waiters = nil
}
