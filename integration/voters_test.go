package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quorumVoters returns the voters' ids DescribeQuorum reports, sorted.
func quorumVoters(q kmsg.DescribeQuorumResponseTopicPartition) []int32 {
	var ids []int32
	for _, v := range q.CurrentVoters {
		ids = append(ids, v.ReplicaID)
	}
	slices.Sort(ids)
	return ids
}

// waitQuorumVoters waits until DescribeQuorum lists the voters want
// (sorted), and voter caughtUp (-1: none) at the high watermark.
func waitQuorumVoters(t *testing.T, cl *kgo.Client, want []int32, caughtUp int32) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		q, err := describeQuorum(cl)
		if err != nil {
			return err
		}
		if got := quorumVoters(q); !slices.Equal(got, want) {
			return fmt.Errorf("voters %v, want %v", got, want)
		}
		for _, v := range q.CurrentVoters {
			if v.ReplicaID == caughtUp && v.LogEndOffset < q.HighWatermark {
				return fmt.Errorf("voter %d at offset %d, high watermark %d", caughtUp, v.LogEndOffset, q.HighWatermark)
			}
		}
		return nil
	})
}

// retryVoterChange sends a voter change through cl until it succeeds,
// retrying while the leader answers it cannot yet (REQUEST_TIMED_OUT: the
// new voter still catching up, or another change in flight) or is being
// elected (NOT_CONTROLLER).
func retryVoterChange(t *testing.T, cl *kgo.Client, req kmsg.Request) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := cl.Request(ctx, req)
		if err != nil {
			return err
		}
		var code int16
		switch r := r.(type) {
		case *kmsg.AddRaftVoterResponse:
			code = r.ErrorCode
		case *kmsg.RemoveRaftVoterResponse:
			code = r.ErrorCode
		}
		return kerr.ErrorForCode(code)
	})
}

// TestReplaceController replaces a controller of a running cluster
// (KIP-853) while topics are being created: a fourth controller, started
// with controller.quorum.bootstrap.servers only, follows the log as an
// observer and is added with AddRaftVoter; then the active controller is
// removed with RemoveRaftVoter and stopped. Every creation answered with
// success is in Metadata on every broker; DescribeQuorum finds a leader
// throughout; a controller killed (kill -9) and restarted after the change
// comes back with the new voter set.
func TestReplaceController(t *testing.T) {
	c := startReplaceCluster(t)
	seeds := strings.Join([]string{c.brokers[0].seed(), c.brokers[1].seed()}, ",")
	adm := newAdmin(t, seeds)
	cl := newClient(t, seeds)

	// Topics created continuously; those answered with success are kept.
	var (
		mu      sync.Mutex
		created []string
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			name := fmt.Sprintf("replace-%04d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := adm.CreateTopic(ctx, 1, 2, nil, name)
			cancel()
			if err == nil && resp.Err == nil {
				mu.Lock()
				created = append(created, name)
				mu.Unlock()
			} else {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	// DescribeQuorum throughout: the longest time without a leader.
	var maxGap atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The time between two answers naming a leader (a request the
		// forwarding channel retries through an election counts whole).
		last := time.Now()
		for !stop.Load() {
			q, err := describeQuorum(cl)
			if gap := time.Since(last); int64(gap) > maxGap.Load() {
				maxGap.Store(int64(gap))
			}
			if err == nil && q.LeaderID >= 0 {
				last = time.Now()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	// A fourth controller joins as an observer, then is added.
	const newID = 7
	c.start(newID)
	c.procs[newID].waitStarted(t)
	eventually(t, 30*time.Second, func() error {
		q, err := describeQuorum(cl)
		if err != nil {
			return err
		}
		for _, o := range q.Observers {
			if o.ReplicaID == newID && o.LogEndOffset >= q.HighWatermark-100 {
				return nil
			}
		}
		return fmt.Errorf("controller %d is not an observer caught up (observers %v)", newID, q.Observers)
	})
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID = newID
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", uint16(c.ctrls[3].ctrl)
	add.Listeners = append(add.Listeners, l)
	retryVoterChange(t, cl, add)
	waitQuorumVoters(t, cl, []int32{1, 2, 3, newID}, -1)

	// Remove the active controller, then stop it.
	q, err := describeQuorum(cl)
	if err != nil {
		t.Fatal(err)
	}
	removed := q.LeaderID
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.VoterID = removed
	retryVoterChange(t, cl, rm)
	c.procs[removed].stop(t)
	want := slices.DeleteFunc([]int32{1, 2, 3, newID}, func(id int32) bool { return id == removed })
	waitQuorumVoters(t, cl, want, -1)

	// kill -9 a remaining original controller and restart it: it comes
	// back with the new voter set and the quorum goes on.
	var victim int32
	for _, id := range want {
		if id != newID {
			victim = id
			break
		}
	}
	c.procs[victim].kill(t)
	c.start(victim)
	c.procs[victim].waitStarted(t)
	waitQuorumVoters(t, cl, want, victim)
	mu.Lock()
	before := len(created)
	mu.Unlock()
	eventually(t, 30*time.Second, func() error { // creations go on
		mu.Lock()
		defer mu.Unlock()
		if len(created) < before+3 {
			return fmt.Errorf("%d topics created, %d before the restart", len(created), before)
		}
		return nil
	})
	stop.Store(true)
	wg.Wait()

	gap := time.Duration(maxGap.Load())
	t.Logf("%d topics created; longest time DescribeQuorum found no leader: %v", len(created), gap)
	// A leader killed: up to 2 s until a randomized election timeout
	// (controller.quorum.election.timeout.ms 1 s) fires, plus a
	// DescribeQuorum forwarded through the election (the request timeout,
	// 2 s), plus slack for a loaded 2-core machine. A lost majority would
	// leave no leader until the killed controller is back and caught up.
	if gap > 6*time.Second {
		t.Errorf("the quorum had no leader for %v", gap)
	}
	// Every topic answered with success is on every broker.
	for _, b := range c.brokers {
		bcl := newClient(t, b.seed())
		eventually(t, 30*time.Second, func() error {
			req := kmsg.NewPtrMetadataRequest()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := req.RequestWith(ctx, bcl)
			if err != nil {
				return err
			}
			have := map[string]bool{}
			for _, tp := range resp.Topics {
				if tp.Topic != nil && tp.ErrorCode == 0 {
					have[*tp.Topic] = true
				}
			}
			for _, name := range created {
				if !have[name] {
					return fmt.Errorf("broker %d lacks topic %s", b.id, name)
				}
			}
			return nil
		})
	}
	if len(created) == 0 {
		t.Fatal(errors.New("no topic was created"))
	}
}

// startReplaceCluster starts three controller-only nodes (1-3) and two
// broker-only nodes (4, 5); c.start(7) starts a fourth controller that
// knows the quorum by its bootstrap servers only.
func startReplaceCluster(t *testing.T) *rolesCluster {
	t.Helper()
	return startReplaceClusterWith(t)
}

// startReplaceClusterWith is startReplaceCluster with more settings for
// every node.
func startReplaceClusterWith(t *testing.T, extra ...string) *rolesCluster {
	t.Helper()
	c := &rolesCluster{procs: map[int32]*brokerProcess{}}
	for i := range 4 {
		c.ctrls = append(c.ctrls, clusterNode{id: int32(i + 1), ctrl: freePort(t), dir: t.TempDir()})
	}
	c.ctrls[3].id = 7
	for i := range 2 {
		c.brokers = append(c.brokers, clusterNode{id: int32(i + 4), port: freePort(t), dir: t.TempDir()})
	}
	var voters, bootstrap []string
	for _, n := range c.ctrls[:3] {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.id, n.ctrl))
		bootstrap = append(bootstrap, fmt.Sprintf("127.0.0.1:%d", n.ctrl))
	}
	common := append([]string{"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"moldau.metrics.listener=", "broker.session.timeout.ms=4000", "broker.heartbeat.interval.ms=500",
		// Small snapshots, but segments larger than the batches of topics
		// created concurrently (a batch over the segment size stops the
		// quorum; metadata.log.segment.bytes is at least 8 MiB).
		"metadata.log.max.record.bytes.between.snapshots=2048", "internal.metadata.log.segment.bytes=65536",
		"metadata.max.retention.bytes=1"}, extra...)
	c.start = func(id int32) {
		var settings []string
		var addr string
		switch {
		case id <= 3 || id == 7:
			n := c.ctrls[min(id, 4)-1]
			addr = fmt.Sprintf("127.0.0.1:%d", n.ctrl)
			quorum := "controller.quorum.voters=" + strings.Join(voters, ",")
			if id == 7 {
				quorum = "controller.quorum.bootstrap.servers=" + strings.Join(bootstrap, ",")
			}
			settings = []string{fmt.Sprintf("node.id=%d", id), "process.roles=controller", quorum,
				"listeners=CONTROLLER://" + addr, "advertised.listeners=CONTROLLER://" + addr, "log.dirs=" + n.dir}
		default:
			n := c.brokers[id-4]
			addr = n.seed()
			settings = []string{fmt.Sprintf("node.id=%d", id), "process.roles=broker",
				"controller.quorum.bootstrap.servers=" + strings.Join(bootstrap, ","),
				"listeners=PLAINTEXT://" + addr, "advertised.listeners=PLAINTEXT://" + addr,
				"inter.broker.listener.name=PLAINTEXT", "log.dirs=" + n.dir}
		}
		var args []string
		for _, o := range append(settings, common...) {
			args = append(args, "--override", o)
		}
		c.procs[id] = launchProcess(t, addr, args...)
	}
	for id := int32(1); id <= 5; id++ {
		c.start(id)
	}
	for id := int32(1); id <= 5; id++ {
		c.procs[id].waitStarted(t)
	}
	return c
}
