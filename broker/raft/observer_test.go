package raft

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startObserver opens an observer (node id 100) on dir following c.
func (c *cluster) startObserver(dir string, bootstrap bool) (*Node, *testSM) {
	c.t.Helper()
	cfg := c.config(1)
	cfg.NodeID, cfg.Dir = 100, dir
	cfg.Logger = testLogger(c.t).With("test_node", "observer")
	if bootstrap {
		cfg.Voters = nil
		for _, addr := range c.voters {
			cfg.Bootstrap = append(cfg.Bootstrap, addr)
		}
		slices.Sort(cfg.Bootstrap)
	}
	sm := &testSM{}
	n, err := OpenObserver(cfg, sm)
	if err != nil {
		c.t.Fatalf("open observer: %v", err)
	}
	c.t.Cleanup(func() { n.Close() })
	return n, sm
}

func waitSM(t *testing.T, sm *testSM, want []string) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("the observer to apply %d records", len(want)), func() bool {
		got, _ := sm.state()
		return slices.Equal(got, want)
	})
}

func TestObserverRefusesToVote(t *testing.T) {
	_, err := OpenObserver(Config{NodeID: 1, Voters: map[int32]string{1: "127.0.0.1:1"}, Dir: t.TempDir()}, &testSM{})
	if err == nil || !strings.Contains(err.Error(), "is a voter") {
		t.Fatalf("a voter opened as an observer: %v", err)
	}
	_, err = OpenObserver(Config{NodeID: 5, Dir: t.TempDir()}, &testSM{})
	if err == nil {
		t.Fatal("an observer opened without voters or bootstrap servers")
	}
}

// An observer that starts after the leader deleted the log it needs
// catches up from a snapshot (FetchSnapshot), then from the log, keeps its
// own copy on disk, and resumes from it after a restart.
func TestObserverCatchesUpFromSnapshotAndLog(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.MaxBytesBetweenSnapshots = 8 << 10
		cfg.MaxRetentionBytes = 1
		cfg.SegmentBytes = 16 << 10
	})
	lid, epoch := c.leader(10 * time.Second)
	var want []string
	add := func(k int) {
		for range k {
			r := fmt.Sprintf("%s-%d", strings.Repeat("v", 200), len(want))
			appendAndCommit(t, c.nodes[lid], epoch, r)
			want = append(want, r)
		}
	}
	add(200)
	waitFor(t, 10*time.Second, "the leader to delete log before a snapshot", func() bool {
		n := c.nodes[lid]
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.st.logStart > 0
	})
	dir := filepath.Join(t.TempDir(), "observer")
	obs, sm := c.startObserver(dir, true)
	waitSM(t, sm, want)
	sm.mu.Lock()
	loaded := len(sm.snapshots)
	sm.mu.Unlock()
	if loaded == 0 {
		t.Fatal("the observer caught up without the leader's snapshot")
	}
	if st := obs.State(); st != "observer" {
		t.Fatalf("state %q", st)
	}
	if le := obs.LeaderAndEpoch(); le.LeaderID != lid || le.Epoch != epoch {
		t.Fatalf("observer follows %+v, leader is %d at %d", le, lid, epoch)
	}
	if _, err := obs.ScheduleAppend(epoch, [][]byte{[]byte("x")}); err == nil {
		t.Fatal("an observer appended")
	}
	add(100) // past another snapshot of the observer's own
	waitSM(t, sm, want)
	info, err := c.nodes[lid].DescribeQuorum()
	if err != nil || len(info.Observers) != 1 || info.Observers[0].ReplicaID != 100 {
		t.Fatalf("DescribeQuorum observers %+v (%v)", info.Observers, err)
	}
	waitFor(t, 10*time.Second, "the observer to write a snapshot", func() bool {
		ids, _ := listSnapshots(obs.cfg.FS, obs.ml.dir)
		return len(ids) > 0 && ids[len(ids)-1].Offset > sm.snapshots[0].Offset
	})
	if err := obs.Close(); err != nil {
		t.Fatal(err)
	}
	// Restarted with every voter down: it replays its own snapshot and log.
	for id := range c.voters {
		c.stop(id)
	}
	obs, sm = c.startObserver(dir, false)
	waitSM(t, sm, want)
	if err := obs.Err(); err != nil {
		t.Fatal(err)
	}
}

// When the leader stops, the observer finds the new one and follows it.
func TestObserverFollowsLeaderChange(t *testing.T) {
	c := newCluster(t, 3, nil)
	lid, epoch := c.leader(10 * time.Second)
	want := []string{"a"}
	appendAndCommit(t, c.nodes[lid], epoch, "a")
	obs, sm := c.startObserver(filepath.Join(t.TempDir(), "observer"), false)
	waitSM(t, sm, want)
	c.stop(lid)
	newLid, newEpoch := c.leader(10 * time.Second)
	if newLid == lid {
		t.Fatalf("leader %d again", lid)
	}
	appendAndCommit(t, c.nodes[newLid], newEpoch, "b")
	want = append(want, "b")
	waitSM(t, sm, want)
	waitFor(t, 5*time.Second, "the observer to follow the new leader", func() bool {
		return obs.LeaderAndEpoch() == LeaderAndEpoch{LeaderID: newLid, Epoch: newEpoch}
	})
	sm.mu.Lock()
	last := sm.leaders[len(sm.leaders)-1]
	sm.mu.Unlock()
	if last.LeaderID != newLid {
		t.Fatalf("the listener was last told of leader %+v", last)
	}
	c.start(lid) // the old leader rejoins as a follower and answers NOT_LEADER
	appendAndCommit(t, c.nodes[newLid], newEpoch, "c")
	want = append(want, "c")
	waitSM(t, sm, want)
}

// A Fetch with nothing to return does not hold its caller: the leader
// answers it later, with the batch once one commits (or empty after its
// max wait), and at once when the node closes.
func TestLeaderAnswersWaitingFetchLater(t *testing.T) {
	c := newCluster(t, 1, nil)
	lid, epoch := c.leader(10 * time.Second)
	n := c.nodes[lid]
	appendAndCommit(t, n, epoch, "a")
	fetchAt := func(offset int64) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MaxBytes = 17, 500, 1<<20
		req.ReplicaState.ID = 100
		tp := kmsg.NewFetchRequestTopic()
		tp.TopicID = MetadataTopicID
		p := kmsg.NewFetchRequestTopicPartition()
		p.FetchOffset, p.PartitionMaxBytes = offset, 1<<20
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		return req
	}
	answers := make(chan *kmsg.FetchResponse, 2)
	n.HandleFetchAsync(fetchAt(n.HighWatermark()), func(r *kmsg.FetchResponse) { answers <- r })
	select {
	case <-answers:
		t.Fatal("a fetch at the high watermark was answered at once")
	default:
	}
	appendAndCommit(t, n, epoch, "b")
	select {
	case r := <-answers:
		if p := r.Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("answered %v", kerr.ErrorForCode(p.ErrorCode))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting fetch was never answered")
	}
	// From the start: everything, at once.
	r := n.HandleFetch(fetchAt(0))
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != n.HighWatermark() {
		t.Fatalf("fetch from 0: %+v", p)
	}
	// Another topic is unknown.
	bad := fetchAt(0)
	bad.Topics[0].TopicID = [16]byte{1}
	if p := n.HandleFetch(bad).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic answered %v", kerr.ErrorForCode(p.ErrorCode))
	}
	n.HandleFetchAsync(fetchAt(n.HighWatermark()), func(r *kmsg.FetchResponse) { answers <- r })
	c.stop(lid)
	select {
	case r := <-answers:
		// BROKER_NOT_AVAILABLE, or empty if its max wait ran out first.
		if p := r.Topics[0].Partitions[0]; p.ErrorCode != kerr.BrokerNotAvailable.Code && (p.ErrorCode != 0 || len(p.RecordBatches) > 0) {
			t.Fatalf("after close: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting fetch outlived the node")
	}
}

// A Fetch with no replica id (-1: the console, or any client that is
// not a replica) is answered, and, as Kafka's leader ignores it
// (LeaderState.updateReplicaState), the leader keeps no state for it:
// DescribeQuorum lists no observer.
func TestLeaderDoesNotListFetcherWithoutID(t *testing.T) {
	c := newCluster(t, 1, nil)
	lid, epoch := c.leader(10 * time.Second)
	n := c.nodes[lid]
	appendAndCommit(t, n, epoch, "a")
	for _, version := range []int16{12, 17} {
		req := kmsg.NewPtrFetchRequest() // ReplicaID and ReplicaState.ID -1
		req.Version, req.MaxBytes = version, 1<<20
		tp := kmsg.NewFetchRequestTopic()
		tp.Topic, tp.TopicID = MetadataTopicPartition.Topic, MetadataTopicID
		p := kmsg.NewFetchRequestTopicPartition()
		p.PartitionMaxBytes = 1 << 20
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		if p := n.HandleFetch(req).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
			t.Fatalf("v%d fetch with no replica id: %v, %d bytes", version, kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
		}
	}
	info, err := n.DescribeQuorum()
	if err != nil || len(info.Observers) != 0 {
		t.Fatalf("DescribeQuorum observers after fetches with no replica id: %+v (%v)", info.Observers, err)
	}
}
