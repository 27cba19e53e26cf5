package raft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestVotersRecordRoundTrip(t *testing.T) {
	set := VoterSet{
		{ID: 1, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9093}}, MaxKRaftVersion: 1},
		{ID: 7, DirectoryID: [16]byte{1, 2, 3}, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "h", Port: 1}, {Name: "X", Host: "::1", Port: 65535}}, MinKRaftVersion: 0, MaxKRaftVersion: 1},
	}
	got, err := parseVoters(votersValue(set))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(set) {
		t.Fatalf("round trip: %v, want %v", got, set)
	}
	if v, err := parseKRaftVersion(kraftVersionValue(1)); err != nil || v != 1 {
		t.Fatalf("kraft.version: %d %v", v, err)
	}
	b := buildControlBatchOf(5, 3, 0, controlRecord{ControlKRaftVersion, kraftVersionValue(1)}, controlRecord{ControlVoters, votersValue(set)})
	if vs, ok := votersOf(b); !ok || fmt.Sprint(vs) != fmt.Sprint(set) {
		t.Fatalf("votersOf: %v %v", vs, ok)
	}
	if _, err := parseVoters(votersValue(set)[:20]); err == nil {
		t.Fatal("a truncated VotersRecord parsed")
	}
}

// addController starts node id as a controller outside the voter set: it
// opens (with the static voters of the cluster) as an observer.
func (c *cluster) addController(id int32) {
	c.t.Helper()
	c.servers[id] = newTestServer(c.t)
	c.dirs[id] = filepath.Join(c.t.TempDir(), fmt.Sprintf("node-%d", id))
	c.start(id)
}

func (c *cluster) voter(id int32) Voter {
	host, port, _ := net.SplitHostPort(c.servers[id].addr())
	p, _ := strconv.Atoi(port)
	return Voter{ID: id, Endpoints: []Endpoint{{Name: "CONTROLLER", Host: host, Port: uint16(p)}}}
}

// retryChange retries a voter change while it times out (the new voter
// still catching up, the leader's first commit pending).
func retryChange(t *testing.T, change func(context.Context) error) error {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := change(ctx)
		cancel()
		if err == nil || !errors.Is(err, kerr.RequestTimedOut) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) waitVoters(want ...int32) {
	c.t.Helper()
	for id, n := range c.nodes {
		waitFor(c.t, 10*time.Second, fmt.Sprintf("node %d to have voters %v", id, want), func() bool {
			return slices.Equal(n.Voters().IDs(), want)
		})
	}
}

func TestAddAndRemoveVoters(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.MaxBytesBetweenSnapshots = 2 << 10
	})
	lid, epoch := c.leader(10 * time.Second)
	want := []string{"a"}
	appendAndCommit(t, c.nodes[lid], epoch, "a")

	c.addController(4)
	if s := c.nodes[4].State(); s != "observer" {
		t.Fatalf("node 4 opened as %s, want observer", s)
	}
	c.waitState(want)
	if err := retryChange(t, func(ctx context.Context) error { return c.nodes[lid].AddVoter(ctx, c.voter(4)) }); err != nil {
		t.Fatalf("add voter 4: %v", err)
	}
	waitFor(t, 10*time.Second, "node 4 to become a voter", func() bool { return c.nodes[4].State() != "observer" })
	c.waitVoters(1, 2, 3, 4)
	err := c.nodes[lid].AddVoter(context.Background(), c.voter(4))
	if !errors.Is(err, kerr.DuplicateVoter) {
		t.Fatalf("adding voter 4 again: %v, want DUPLICATE_VOTER", err)
	}
	if err := c.nodes[lid].RemoveVoter(context.Background(), 9, [16]byte{}); !errors.Is(err, kerr.VoterNotFound) {
		t.Fatalf("removing non-voter 9: %v, want VOTER_NOT_FOUND", err)
	}
	for i := range 40 { // some snapshots, with the new voter set
		want = append(want, fmt.Sprintf("r%03d-%0200d", i, i))
		appendAndCommit(t, c.nodes[lid], epoch, want[len(want)-1])
	}
	c.waitState(want)
	info, err := c.nodes[lid].DescribeQuorum()
	if err != nil || len(info.Voters) != 4 {
		t.Fatalf("describe quorum: %+v %v", info, err)
	}

	// Remove a follower among the first three, then the leader itself.
	var follower int32
	for id := int32(1); id <= 3; id++ {
		if id != lid {
			follower = id
			break
		}
	}
	if err := retryChange(t, func(ctx context.Context) error { return c.nodes[lid].RemoveVoter(ctx, follower, [16]byte{}) }); err != nil {
		t.Fatalf("remove voter %d: %v", follower, err)
	}
	c.stop(follower)
	rest := slices.DeleteFunc([]int32{1, 2, 3, 4}, func(id int32) bool { return id == follower })
	c.waitVoters(rest...)
	want = append(want, "after-remove")
	appendAndCommit(t, c.nodes[lid], epoch, "after-remove")

	start := time.Now()
	if err := retryChange(t, func(ctx context.Context) error { return c.nodes[lid].RemoveVoter(ctx, lid, [16]byte{}) }); err != nil {
		t.Fatalf("remove the leader %d: %v", lid, err)
	}
	c.stop(lid)
	rest = slices.DeleteFunc(rest, func(id int32) bool { return id == lid })
	newLeader, newEpoch := c.leader(10 * time.Second)
	t.Logf("leader %d removed itself; %d leads epoch %d %v later", lid, newLeader, newEpoch, time.Since(start))
	c.waitVoters(rest...)
	want = append(want, "new-leader")
	appendAndCommit(t, c.nodes[newLeader], newEpoch, "new-leader")
	c.waitState(want)

	// The new set survives a restart of every node, from snapshot + log.
	for _, id := range rest {
		c.stop(id)
	}
	for _, id := range rest {
		c.start(id)
	}
	for _, id := range rest {
		if s := c.nodes[id].State(); s == "observer" {
			t.Fatalf("node %d restarted as an observer", id)
		}
	}
	c.waitVoters(rest...)
	l, e := c.leader(10 * time.Second)
	want = append(want, "after-restart")
	appendAndCommit(t, c.nodes[l], e, "after-restart")
	c.waitState(want)
	for _, id := range rest {
		dir := c.nodes[id].ml.dir
		ids, err := listSnapshots(c.nodes[id].cfg.FS, dir)
		if err != nil || len(ids) == 0 {
			t.Fatalf("node %d has no snapshot: %v", id, err)
		}
		data, err := readWholeFile(c.nodes[id].cfg.FS, filepath.Join(dir, snapshotFileName(ids[len(ids)-1])))
		if err != nil {
			t.Fatal(err)
		}
		if set, ok := snapshotVoters(data); !ok || len(set) < len(rest) {
			t.Fatalf("node %d: snapshot %v holds no voter set (%v)", id, ids[len(ids)-1], set)
		}
	}
}

func TestVoterChangesOneAtATime(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) { cfg.ElectionTimeout = 3 * time.Second })
	lid, epoch := c.leader(20 * time.Second)
	appendAndCommit(t, c.nodes[lid], epoch, "a")
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != lid {
			others = append(others, id)
		}
	}
	// Alone, the leader appends the first change but cannot commit it.
	for _, id := range others {
		c.stop(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := c.nodes[lid].RemoveVoter(ctx, others[0], [16]byte{})
	cancel()
	if !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("uncommittable change: %v, want REQUEST_TIMED_OUT", err)
	}
	err = c.nodes[lid].RemoveVoter(context.Background(), others[1], [16]byte{})
	if !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("second change while one is in flight: %v, want REQUEST_TIMED_OUT", err)
	}
	for _, id := range others {
		c.start(id)
	}
	// The first change commits once a majority is back (the removed
	// voter need not learn it).
	c.stop(others[0])
	c.waitVoters(slices.DeleteFunc([]int32{1, 2, 3}, func(id int32) bool { return id == others[0] })...)
}

// The metrics of a node read its transport while the node is promoted
// from observer to voter (which makes the transport): no data race.
func TestMetricsWhileObserverPromoted(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newCluster(t, 3, func(cfg *Config) {
		if cfg.NodeID == 4 {
			cfg.Registerer = reg
		}
	})
	lid, _ := c.leader(10 * time.Second)
	c.addController(4)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				reg.Gather()
			}
		}
	}()
	if err := retryChange(t, func(ctx context.Context) error { return c.nodes[lid].AddVoter(ctx, c.voter(4)) }); err != nil {
		t.Fatalf("add voter 4: %v", err)
	}
	waitFor(t, 10*time.Second, "node 4 to become a voter", func() bool { return c.nodes[4].State() != "observer" })
	close(stop)
	<-done
}
