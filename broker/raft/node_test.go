package raft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestSingleNodeElectsItselfAndCommits(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newCluster(t, 1, func(cfg *Config) { cfg.Registerer = reg })
	n := c.nodes[1]
	// A quorum of one campaigns at Open: no election timeout to wait.
	start := time.Now()
	lid, epoch := c.leader(2 * time.Second)
	if lid != 1 || epoch != 1 {
		t.Fatalf("leader %d epoch %d", lid, epoch)
	}
	t.Logf("single node elected itself in %v", time.Since(start))
	var want []string
	for i := range 20 {
		recs := []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)}
		off := appendAndCommit(t, n, epoch, recs...)
		want = append(want, recs...)
		// Offsets count records; offset 0 is the LeaderChange batch.
		if off != int64(2*i+2) {
			t.Fatalf("batch %d ends at offset %d, want %d", i, off, 2*i+2)
		}
	}
	c.waitState(want)
	if hw := n.HighWatermark(); hw != 41 {
		t.Fatalf("high watermark %d, want 41", hw)
	}
	qi, err := n.DescribeQuorum()
	if err == nil && (qi.LeaderID != 1 || qi.HighWatermark != 41) {
		t.Fatalf("describe quorum %+v", qi)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]float64{}
	for _, mf := range mfs {
		names[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
	}
	if names["kafka_server_raftmetrics_current_leader"] != 1 || names["kafka_server_raftmetrics_high_watermark"] != 41 ||
		names["kafka_server_raftmetrics_commit_latency_avg"] <= 0 || names["kafka_server_raftmetrics_append_records_rate"] <= 0 {
		t.Fatalf("metrics %v", names)
	}

	// On disk: Kafka's layout.
	dir := filepath.Join(c.dirs[1], "__cluster_metadata-0")
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000000.log")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "quorum-state"))
	if err != nil {
		t.Fatal(err)
	}
	var qs map[string]any
	if err := json.Unmarshal(b, &qs); err != nil {
		t.Fatalf("quorum-state %q: %v", b, err)
	}
	if qs["leaderEpoch"] != 1.0 || qs["votedId"] != 1.0 || qs["leaderId"] != 1.0 || qs["data_version"] != 0.0 {
		t.Fatalf("quorum-state %s", b)
	}

	// Restart: the log replays into a new state machine, a new epoch.
	c.stop(1)
	if err := n.Close(); err != nil || !errors.Is(n.Err(), ErrClosed) {
		t.Fatalf("second Close: %v, Err %v", err, n.Err())
	}
	c.start(1)
	lid, epoch2 := c.leader(2 * time.Second)
	if lid != 1 || epoch2 != 2 {
		t.Fatalf("after restart: leader %d epoch %d", lid, epoch2)
	}
	c.waitState(want)
	if _, err := c.nodes[1].ScheduleAppend(epoch, [][]byte{[]byte("x")}); !errors.Is(err, ErrNotLeader) || !errors.Is(err, kerr.NotController) {
		t.Fatalf("append at the old epoch: %v", err)
	}
}

func TestThreeNodesReplicateAndFailOver(t *testing.T) {
	c := newCluster(t, 3, nil)
	lid, epoch := c.leader(10 * time.Second)
	var want []string
	for i := range 30 {
		r := fmt.Sprintf("r%d", i)
		appendAndCommit(t, c.nodes[lid], epoch, r)
		want = append(want, r)
	}
	c.waitState(want)
	// Every listener saw the same batches at the same offsets.
	offsets := func(id int32) []int64 {
		c.sms[id].mu.Lock()
		defer c.sms[id].mu.Unlock()
		return slices.Clone(c.sms[id].offsets)
	}
	for id := range c.nodes {
		if !slices.Equal(offsets(id), offsets(lid)) {
			t.Fatalf("node %d saw offsets %v, leader %v", id, offsets(id), offsets(lid))
		}
	}
	// A follower refuses appends.
	for id, n := range c.nodes {
		if id != lid {
			if _, err := n.ScheduleAppend(epoch, [][]byte{[]byte("x")}); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("follower %d appended: %v", id, err)
			}
		}
	}
	qi, err := c.nodes[lid].DescribeQuorum()
	if err != nil {
		t.Fatal(err)
	}
	if len(qi.Voters) != 3 || qi.LeaderEpoch != epoch {
		t.Fatalf("describe quorum %+v", qi)
	}

	// Kill the leader: another is elected within a few seconds.
	old := c.nodes[lid]
	c.stop(lid)
	start := time.Now()
	nlid, nepoch := c.leader(5 * time.Second)
	t.Logf("new leader %d at epoch %d after %v", nlid, nepoch, time.Since(start))
	if nlid == lid || nepoch <= epoch {
		t.Fatalf("new leader %d epoch %d (old %d, %d)", nlid, nepoch, lid, epoch)
	}
	if _, err := old.ScheduleAppend(epoch, [][]byte{[]byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed node appended: %v", err)
	}
	if _, err := c.nodes[nlid].ScheduleAppend(epoch, [][]byte{[]byte("x")}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append at the old epoch on the new leader: %v", err)
	}
	// Nothing committed was lost; the survivors go on.
	for i := range 10 {
		r := fmt.Sprintf("s%d", i)
		appendAndCommit(t, c.nodes[nlid], nepoch, r)
		want = append(want, r)
	}
	c.waitState(want)

	// The old leader comes back and catches up.
	c.start(lid)
	c.waitState(want)
}

func TestWaitForCommitFailsWhenLeadershipIsLost(t *testing.T) {
	c := newCluster(t, 3, nil)
	lid, epoch := c.leader(10 * time.Second)
	appendAndCommit(t, c.nodes[lid], epoch, "committed")
	for id := range c.voters {
		if id != lid {
			c.stop(id)
		}
	}
	off, err := c.nodes[lid].ScheduleAppend(epoch, [][]byte{[]byte("orphan")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// CheckQuorum makes the leader step down; the wait fails, not hangs.
	err = c.nodes[lid].WaitForCommit(ctx, epoch, off)
	var nle *NotLeaderError
	if !errors.As(err, &nle) || nle.Asked != epoch {
		t.Fatalf("wait: %v", err)
	}
}

func TestRestartedNodeCatchesUpThroughSnapshot(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.MaxBytesBetweenSnapshots = 8 << 10
		cfg.MaxRetentionBytes = 1 // keep no log before the newest snapshot
		cfg.SegmentBytes = 16 << 10
	})
	lid, epoch := c.leader(10 * time.Second)
	var want []string
	add := func(k int) {
		for i := range k {
			r := fmt.Sprintf("%s-%d", strings.Repeat("v", 200), len(want)+i)
			appendAndCommit(t, c.nodes[lid], epoch, r)
		}
		for i := range k {
			want = append(want, fmt.Sprintf("%s-%d", strings.Repeat("v", 200), len(want)))
			_ = i
		}
	}
	add(10)
	c.waitState(want)
	var lagger int32
	for id := range c.nodes {
		if id != lid {
			lagger = id
			break
		}
	}
	lagEnd := c.nodes[lagger].ml.l.LogEndOffset()
	c.stop(lagger)
	// Enough for several snapshots and segment deletions on the others.
	add(300)
	waitFor(t, 10*time.Second, "the leader to delete the log the lagger needs", func() bool {
		n := c.nodes[lid]
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.err == nil && n.st.hw > lagEnd && n.st.logStart > lagEnd
	})
	c.start(lagger)
	c.waitState(want)
	sm := c.sms[lagger]
	sm.mu.Lock()
	loaded := len(sm.snapshots)
	sm.mu.Unlock()
	if loaded == 0 {
		t.Fatal("the lagger caught up without a snapshot")
	}
	// And it keeps following.
	add(5)
	c.waitState(want)
	for id, n := range c.nodes {
		if err := n.Err(); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
	}
}

func TestRestartReplaysSnapshotAndTail(t *testing.T) {
	c := newCluster(t, 1, func(cfg *Config) {
		cfg.MaxBytesBetweenSnapshots = 4 << 10
		cfg.SegmentBytes = 8 << 10
		cfg.MaxRetentionBytes = 1
	})
	_, epoch := c.leader(2 * time.Second)
	var want []string
	for i := range 200 {
		r := fmt.Sprintf("%s-%d", strings.Repeat("w", 100), i)
		appendAndCommit(t, c.nodes[1], epoch, r)
		want = append(want, r)
	}
	c.waitState(want)
	dir := filepath.Join(c.dirs[1], "__cluster_metadata-0")
	waitFor(t, 5*time.Second, "one snapshot and a truncated log", func() bool {
		ids, _ := listSnapshots(c.nodes[1].cfg.FS, dir)
		return len(ids) == 1 && c.nodes[1].ml.l.LogStartOffset() > 0 // Log is safe for concurrent use
	})
	c.stop(1)
	c.start(1)
	c.leader(2 * time.Second)
	c.waitState(want)
	sm := c.sms[1]
	sm.mu.Lock()
	snaps := slices.Clone(sm.snapshots)
	sm.mu.Unlock()
	if len(snaps) != 1 {
		t.Fatalf("loaded snapshots %v", snaps)
	}
}

// With Kafka's default controller.quorum.election.timeout.ms (1 s) a
// new leader is elected within a few seconds of the old one dying.
func TestFailoverWithDefaultTimeouts(t *testing.T) {
	c := newCluster(t, 3, func(cfg *Config) { cfg.TickInterval, cfg.ElectionTimeout = 0, 0 })
	var want []string
	for round := range 2 {
		lid, epoch := c.leader(10 * time.Second)
		r := fmt.Sprintf("round%d", round)
		appendAndCommit(t, c.nodes[lid], epoch, r)
		want = append(want, r)
		c.stop(lid)
		start := time.Now()
		nlid, _ := c.leader(10 * time.Second)
		took := time.Since(start)
		t.Logf("round %d: leader %d killed, %d elected after %v", round, lid, nlid, took)
		if took > 4*time.Second {
			t.Fatalf("failover took %v", took)
		}
		c.waitState(want)
		c.start(lid)
	}
}
