// Package controllertest is an in-memory, single-voter metadata quorum for
// tests of the controller and of what reads the metadata (kapi, replica):
// appends are committed at once, in order, on the quorum's own goroutine,
// and handed to every listener as the real quorum does. Nothing is written
// to disk; crash and replication behaviour is tested against broker/raft.
package controllertest

import (
	"errors"
	"sync"

	"github.com/moldau/moldau/broker/controller"
	"github.com/moldau/moldau/broker/routine"
)

// Listener is what the quorum calls: the controller and the metadata
// loader (through an adapter).
type Listener interface {
	HandleCommit(controller.Batch)
	HandleLeaderChange(leader, epoch int32)
}

// Quorum is the in-memory quorum.
type Quorum struct {
	mu        sync.Mutex
	nodeID    int32
	leader    int32
	epoch     int32
	next      int64
	hold      bool
	held      []controller.Batch
	batches   []controller.Batch
	listeners []Listener
	queue     chan func()
	g         routine.Group
}

// ErrNotLeader is returned by ScheduleAppend on a node that does not lead
// the given epoch.
var ErrNotLeader = errors.New("controllertest: not the leader of that epoch")

// New returns a quorum on which nodeID will lead once Elect is called.
func New(nodeID int32) *Quorum {
	q := &Quorum{nodeID: nodeID, leader: -1, queue: make(chan func(), 1024)}
	q.g.Go(func(done <-chan struct{}) {
		for {
			select {
			case f := <-q.queue:
				f()
			case <-done:
				return
			}
		}
	})
	return q
}

// Close stops delivering.
func (q *Quorum) Close() { q.g.StopAndWait() }

// Register adds a listener; it first receives every committed batch.
func (q *Quorum) Register(l Listener) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.listeners = append(q.listeners, l)
	past := append([]controller.Batch(nil), q.batches...)
	leader, epoch := q.leader, q.epoch
	q.queue <- func() {
		for _, b := range past {
			l.HandleCommit(b)
		}
		if leader >= 0 {
			l.HandleLeaderChange(leader, epoch)
		}
	}
}

// Elect makes leader the leader of the next epoch and tells the listeners.
func (q *Quorum) Elect(leader int32) {
	q.mu.Lock()
	q.epoch++
	q.leader = leader
	epoch := q.epoch
	ls := append([]Listener(nil), q.listeners...)
	q.mu.Unlock()
	q.queue <- func() {
		for _, l := range ls {
			l.HandleLeaderChange(leader, epoch)
		}
	}
}

// Leader is the current leader, -1 if none.
func (q *Quorum) Leader() int32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.leader
}

// ScheduleAppend implements controller.RaftClient: the batch takes one
// offset per record and is committed at once (or held, see Hold).
func (q *Quorum) ScheduleAppend(epoch int32, records [][]byte) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.leader != q.nodeID || epoch != q.epoch {
		return 0, ErrNotLeader
	}
	b := controller.Batch{BaseOffset: q.next, LastOffset: q.next + int64(len(records)) - 1, Epoch: epoch, Records: records}
	q.next += int64(len(records))
	if q.hold {
		q.held = append(q.held, b)
		return b.LastOffset, nil
	}
	q.commitLocked(b)
	return b.LastOffset, nil
}

func (q *Quorum) commitLocked(b controller.Batch) {
	q.batches = append(q.batches, b)
	ls := append([]Listener(nil), q.listeners...)
	q.queue <- func() {
		for _, l := range ls {
			l.HandleCommit(b)
		}
	}
}

// Hold keeps later appends uncommitted until Release.
func (q *Quorum) Hold() {
	q.mu.Lock()
	q.hold = true
	q.mu.Unlock()
}

// Held reports how many appends are held.
func (q *Quorum) Held() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.held)
}

// Release commits the held appends.
func (q *Quorum) Release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, b := range q.held {
		q.commitLocked(b)
	}
	q.held, q.hold = nil, false
}

// Batches returns every committed batch.
func (q *Quorum) Batches() []controller.Batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]controller.Batch(nil), q.batches...)
}
