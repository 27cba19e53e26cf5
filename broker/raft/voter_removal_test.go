package raft

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

// follower returns a running voter other than the leader lid.
func (c *cluster) follower(lid int32) int32 {
	c.t.Helper()
	for _, id := range slices.Sorted(maps.Keys(c.nodes)) {
		if id != lid && !c.nodes[id].isObserver() {
			return id
		}
	}
	c.t.Fatal("no follower")
	return -1
}

// waitObserver waits until node id has turned observer (within bound)
// and its voter goroutines have stopped.
func (c *cluster) waitObserver(id int32, bound time.Duration) {
	c.t.Helper()
	n := c.nodes[id]
	start := time.Now()
	waitFor(c.t, bound, fmt.Sprintf("node %d to turn observer", id), func() bool { return n.State() == "observer" })
	c.t.Logf("node %d turned observer %v after its removal", id, time.Since(start).Round(time.Millisecond))
	waitFor(c.t, 5*time.Second, fmt.Sprintf("node %d's voter goroutines to stop", id), func() bool {
		return n.voterGoroutines.Load() == 0
	})
}

// waitListedObserver waits until the leader lid lists id among the
// observers of DescribeQuorum and not among the voters.
func (c *cluster) waitListedObserver(lid, id int32) {
	c.t.Helper()
	waitFor(c.t, 10*time.Second, fmt.Sprintf("leader %d to list node %d as an observer", lid, id), func() bool {
		info, err := c.nodes[lid].DescribeQuorum()
		return err == nil && slices.ContainsFunc(info.Observers, func(r ReplicaState) bool { return r.ReplicaID == id }) &&
			!slices.ContainsFunc(info.Voters, func(r ReplicaState) bool { return r.ReplicaID == id })
	})
}

// transferLeader asks the leader lid to hand its leadership to id (etcd's
// MsgTransferLeader, as a follower forwards it).
func (c *cluster) transferLeader(lid, id int32, epoch int32) {
	c.t.Helper()
	m := &pb.Message{Type: pb.MsgTransferLeader.Enum(), From: new(raftID(id)), To: new(raftID(lid)), Term: new(uint64(epoch))}
	body, err := encodeMessages(nil, []*pb.Message{m})
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.nodes[lid].HandleTransportRequest(body); err != nil {
		c.t.Fatalf("transfer leadership to %d: %v", id, err)
	}
}

// sameOffsets checks that node id's state machine got the batches at the
// offsets the leader's did: its log never diverged.
func (c *cluster) sameOffsets(lid, id int32) {
	c.t.Helper()
	waitFor(c.t, 10*time.Second, fmt.Sprintf("node %d to apply the batches at the leader's offsets", id), func() bool {
		l, o := c.sms[lid], c.sms[id]
		l.mu.Lock()
		want := slices.Clone(l.offsets)
		l.mu.Unlock()
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.snapshots) == 0 && slices.Equal(o.offsets, want)
	})
}

// A follower removed while it runs turns observer: it follows the
// leader with Fetch, applies what is committed after its removal, is
// listed among the observers, never disturbs the quorum, and becomes a
// voter that can lead once added back.
func TestRemovedFollowerTurnsObserver(t *testing.T) {
	c := newCluster(t, 3, nil)
	lid, epoch := c.leader(10 * time.Second)
	want := []string{"a"}
	appendAndCommit(t, c.nodes[lid], epoch, "a")
	c.waitState(want)
	f := c.follower(lid)
	fn := c.nodes[f]
	if err := retryChange(t, func(ctx context.Context) error { return c.nodes[lid].RemoveVoter(ctx, f, [16]byte{}) }); err != nil {
		t.Fatalf("remove voter %d: %v", f, err)
	}
	c.waitObserver(f, fn.cfg.removedVoterTimeout()+time.Second)

	for i := range 20 {
		want = append(want, fmt.Sprintf("after-%d", i))
		appendAndCommit(t, c.nodes[lid], epoch, want[len(want)-1])
	}
	c.waitState(want) // the observer's too
	c.sameOffsets(lid, f)
	c.waitListedObserver(lid, f)
	if le := fn.LeaderAndEpoch(); le != (LeaderAndEpoch{lid, epoch}) {
		t.Fatalf("the observer follows %+v, the leader is %d at %d", le, lid, epoch)
	}
	if _, err := fn.ScheduleAppend(epoch, [][]byte{[]byte("x")}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("the observer appended: %v", err)
	}
	if _, err := fn.HandleTransportRequest([]byte{0, 0, 0, 0}); err == nil {
		t.Fatal("the observer took raft messages")
	}
	// It does not disturb the quorum: the epoch stays through several
	// election timeouts (an absence, so it has to be waited for).
	time.Sleep(3 * fn.cfg.ElectionTimeout)
	appendAndCommit(t, c.nodes[lid], epoch, "still-epoch")
	want = append(want, "still-epoch")
	c.waitState(want)
	for id, n := range c.nodes {
		if le := n.LeaderAndEpoch(); le != (LeaderAndEpoch{lid, epoch}) {
			t.Fatalf("node %d is at %+v, the quorum was at leader %d epoch %d", id, le, lid, epoch)
		}
	}

	// Added back, it is a voter again, and can be elected.
	if err := retryChange(t, func(ctx context.Context) error { return c.nodes[lid].AddVoter(ctx, c.voter(f)) }); err != nil {
		t.Fatalf("add voter %d back: %v", f, err)
	}
	waitFor(t, 10*time.Second, fmt.Sprintf("node %d to be a voter again", f), func() bool { return fn.State() != "observer" })
	c.waitVoters(1, 2, 3)
	if info, err := c.nodes[lid].DescribeQuorum(); err != nil || slices.ContainsFunc(info.Observers, func(r ReplicaState) bool { return r.ReplicaID == f }) {
		t.Fatalf("voter %d is still listed among the observers: %+v (%v)", f, info.Observers, err)
	}
	appendAndCommit(t, c.nodes[lid], epoch, "added-back")
	want = append(want, "added-back")
	c.waitState(want)
	c.transferLeader(lid, f, epoch)
	waitFor(t, 10*time.Second, fmt.Sprintf("node %d to be elected", f), func() bool { return fn.State() == "leader" })
	newLid, newEpoch := c.leader(10 * time.Second)
	if newLid != f {
		t.Fatalf("node %d leads epoch %d, want %d", newLid, newEpoch, f)
	}
	appendAndCommit(t, fn, newEpoch, "led-by-the-returned")
	want = append(want, "led-by-the-returned")
	c.waitState(want)
	c.sameOffsets(lid, f)
}

// A leader that removes itself hands its leadership off and goes on as
// an observer of the new leader.
func TestRemovedLeaderTurnsObserver(t *testing.T) {
	c := newCluster(t, 3, nil)
	lid, epoch := c.leader(10 * time.Second)
	want := []string{"a"}
	appendAndCommit(t, c.nodes[lid], epoch, "a")
	old := c.nodes[lid]
	if err := retryChange(t, func(ctx context.Context) error { return old.RemoveVoter(ctx, lid, [16]byte{}) }); err != nil {
		t.Fatalf("remove the leader %d: %v", lid, err)
	}
	c.waitObserver(lid, old.cfg.removedVoterTimeout()+time.Second)
	newLid, newEpoch := c.leader(10 * time.Second) // the observer agrees
	if newLid == lid || newEpoch <= epoch {
		t.Fatalf("leader %d at epoch %d after %d at %d removed itself", newLid, newEpoch, lid, epoch)
	}
	c.waitVoters(slices.DeleteFunc([]int32{1, 2, 3}, func(id int32) bool { return id == lid })...)
	for i := range 10 {
		want = append(want, fmt.Sprintf("new-%d", i))
		appendAndCommit(t, c.nodes[newLid], newEpoch, want[len(want)-1])
	}
	c.waitState(want)
	c.sameOffsets(newLid, lid)
	c.waitListedObserver(newLid, lid)
	if _, err := old.DescribeQuorum(); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("the old leader answered DescribeQuorum: %v", err)
	}

	// Restarted, it opens as the observer it had become.
	c.stop(lid)
	c.start(lid)
	if s := c.nodes[lid].State(); s != "observer" {
		t.Fatalf("the removed leader restarted as %s", s)
	}
	want = append(want, "after-restart")
	appendAndCommit(t, c.nodes[newLid], newEpoch, "after-restart")
	c.waitState(want)
	c.sameOffsets(newLid, lid)
}

// closeAll closes every node and server of the cluster.
func (c *cluster) closeAll() {
	c.t.Helper()
	for id := range c.nodes {
		c.stop(id)
	}
	for _, s := range c.servers {
		s.close()
	}
}

// waitGoroutines waits until no more goroutines run than before.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Closing a removed voter at any stage of its turn to observer and back
// leaves no goroutine behind.
func TestRemovedVoterCloseLeavesNoGoroutines(t *testing.T) {
	for _, stage := range []string{"removed", "observer", "added-back"} {
		t.Run(stage, func(t *testing.T) {
			before := runtime.NumGoroutine()
			c := newCluster(t, 3, nil)
			lid, epoch := c.leader(10 * time.Second)
			appendAndCommit(t, c.nodes[lid], epoch, "a")
			f := c.follower(lid)
			fn := c.nodes[f]
			if err := retryChange(t, func(ctx context.Context) error { return c.nodes[lid].RemoveVoter(ctx, f, [16]byte{}) }); err != nil {
				t.Fatalf("remove voter %d: %v", f, err)
			}
			if stage != "removed" {
				c.waitObserver(f, fn.cfg.removedVoterTimeout()+time.Second)
			}
			if stage == "added-back" {
				if err := retryChange(t, func(ctx context.Context) error { return c.nodes[lid].AddVoter(ctx, c.voter(f)) }); err != nil {
					t.Fatalf("add voter %d back: %v", f, err)
				}
				waitFor(t, 10*time.Second, "a voter again", func() bool { return fn.State() != "observer" })
			}
			c.stop(f)
			if err := fn.Close(); err != nil {
				t.Fatalf("a second Close: %v", err)
			}
			if n := fn.voterGoroutines.Load(); n != 0 {
				t.Fatalf("%d voter goroutines after Close", n)
			}
			c.closeAll()
			waitGoroutines(t, before)
		})
	}
}

// cutLinks makes chosen nodes' outbound connections fail (their dials,
// and writes on connections already open).
type cutLinks struct {
	mu  sync.Mutex
	cut map[[2]string]bool // {from node, to address}
}

func (l *cutLinks) isCut(from int32, addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut[[2]string{fmt.Sprint(from), addr}]
}

func (l *cutLinks) set(from int32, addr string, cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut[[2]string{fmt.Sprint(from), addr}] = cut
}

func (l *cutLinks) dial(from int32) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if l.isCut(from, addr) {
			return nil, errors.New("test: link cut")
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &cutConn{Conn: c, cut: func() bool { return l.isCut(from, addr) }}, nil
	}
}

type cutConn struct {
	net.Conn
	cut func() bool
}

func (c *cutConn) Write(b []byte) (int, error) {
	if c.cut() {
		c.Conn.Close()
		return 0, errors.New("test: link cut")
	}
	return c.Conn.Write(b)
}

// A voter that has its removal in its log but never learns that it
// committed (its acknowledgements are lost, the leader steps down) turns
// observer once it has heard from no leader for the bound, drops the
// uncommitted tail, and follows the next leader, which commits the
// removal.
func TestVoterWithUncommittedRemovalTurnsObserver(t *testing.T) {
	links := &cutLinks{cut: map[[2]string]bool{}}
	c := newCluster(t, 3, func(cfg *Config) { cfg.Dial = links.dial(cfg.NodeID) })
	lid, epoch := c.leader(10 * time.Second)
	want := []string{"a"}
	appendAndCommit(t, c.nodes[lid], epoch, "a")
	c.waitState(want)
	f := c.follower(lid)
	fn := c.nodes[f]
	o := slices.DeleteFunc([]int32{1, 2, 3}, func(id int32) bool { return id == lid || id == f })[0]
	c.stop(o)
	links.set(f, c.servers[lid].addr(), true) // f hears the leader, the leader never hears f
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err := c.nodes[lid].RemoveVoter(ctx, f, [16]byte{})
	cancel()
	if err == nil {
		t.Fatal("the removal committed without a majority")
	}
	c.waitObserver(f, 3*fn.cfg.removedVoterTimeout())
	if !slices.Contains(fn.Voters().IDs(), f) {
		t.Fatalf("the observer kept its uncommitted removal: voters %v", fn.Voters().IDs())
	}
	links.set(f, c.servers[lid].addr(), false)
	c.start(o)
	newLid, newEpoch := c.leader(20 * time.Second)
	c.waitVoters(slices.DeleteFunc([]int32{1, 2, 3}, func(id int32) bool { return id == f })...)
	if fn.State() != "observer" {
		t.Fatalf("node %d is %s after its removal committed", f, fn.State())
	}
	want = append(want, "b")
	appendAndCommit(t, c.nodes[newLid], newEpoch, "b")
	c.waitState(want)
	c.sameOffsets(newLid, f)
	c.waitListedObserver(newLid, f)
}
