package integration

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
)

// Reassignment (KIP-455) over TCP with kadm: four brokers, a topic with
// replication factor 2 on brokers 1 and 2 moved to brokers 3 and 4 while an
// idempotent acks=all producer writes and a consumer group reads. The move
// ends (ListPartitionReassignments lists none) with replicas {3,4} and a
// leader among them, brokers 1 and 2 delete their replicas, and every acknowledged
// record is read exactly once; kcat -L agrees on the replicas. The
// command line moves them back; broker 4 is then retired (stopped and
// unregistered) and Metadata no longer lists it.
func TestReassignmentUnderLoad(t *testing.T) {
	nodes := newClusterNodes(t, 4)
	bs := make([]*broker.Broker, len(nodes))
	for i, n := range nodes {
		bs[i] = startInProcessNode(t, n, nodes)
		b := bs[i]
		t.Cleanup(func() { b.Close() })
	}
	waitReady(t, bs...)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.seed())
	}
	const partitions = 3
	createWithAssignment(t, seeds[0], "move", [][]int32{{1, 2}, {2, 1}, {1, 2}}, nil)
	adm := newAdmin(t, joinSeeds(seeds))
	waitISR(t, adm, "move", partitions, 2)
	ctx := ctxTimeout(t, 3*time.Minute)

	prod := newClient(t, joinSeeds(seeds), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("move"),
		kgo.RecordDeliveryTimeout(2*time.Minute))
	sp := startSequenceProducer(ctx, prod, 200, 100)
	group := startSeqGroupConsumer(t, ctx, joinSeeds(seeds), "movers", "move")
	sp.waitAcked(t, 5000, 30*time.Second)

	reassign(t, ctx, adm, "move", [][]int32{{3, 4}, {3, 4}, {3, 4}})
	started := time.Now()
	waitReplicas(t, ctx, adm, "move", [][]int32{{3, 4}, {3, 4}, {3, 4}}, 2)
	t.Logf("three partitions moved from brokers {1,2} to {3,4} in %v under load", time.Since(started).Round(10*time.Millisecond))
	// The old replicas are gone from brokers 1 and 2.
	eventually(t, 30*time.Second, func() error { return dirsGone(nodes[:2], "move", partitions) })
	acked := sp.stopAndCheck(t, ctx, prod)
	group.readExactlyOnce(t, ctx, adm, acked)
	logHoldsOnce(t, ctx, joinSeeds(seeds), "move", acked)
	t.Logf("%d records acknowledged, each in the log once; the group read each once", len(acked))
	kcatAgrees(t, seeds, adm, "move", partitions)

	// And back with the command line, as kafka-reassign-partitions.sh:
	// generate a plan onto brokers 1 and 2, execute it, verify it.
	cli := &cliCluster{brokers: joinSeeds(seeds)}
	dir := t.TempDir()
	topicsFile, planFile := filepath.Join(dir, "topics.json"), filepath.Join(dir, "plan.json")
	os.WriteFile(topicsFile, []byte(`{"version":1,"topics":[{"topic":"move"}]}`), 0o644)
	var gen struct{ Proposed reassignmentJSON }
	cli.okJSON(t, &gen, nil, "cluster", "reassign", "--generate", "--topics-to-move-json-file", topicsFile, "--broker-list", "1,2")
	if len(gen.Proposed.Partitions) != partitions {
		t.Fatalf("generated plan: %+v", gen.Proposed)
	}
	plan, _ := json.Marshal(gen.Proposed)
	os.WriteFile(planFile, plan, 0o644)
	if out := cli.ok(t, nil, "cluster", "reassign", "--execute", "--reassignment-json-file", planFile); !strings.Contains(out, "Successfully started partition reassignment for move-0,move-1,move-2") {
		t.Fatalf("execute:\n%s", out)
	}
	eventually(t, 60*time.Second, func() error {
		if r := cli.moldau(t, nil, "cluster", "reassign", "--verify", "--reassignment-json-file", planFile); r.code != 0 {
			return fmt.Errorf("verify: %s%s", r.stdout, r.stderr)
		}
		return nil
	})
	if out := cli.ok(t, nil, "cluster", "reassign", "--list"); !strings.Contains(out, "No partition reassignments found.") {
		t.Fatalf("list:\n%s", out)
	}
	eventually(t, 10*time.Second, func() error { // every broker has applied it
		md, err := adm.Metadata(ctx, "move")
		if err != nil {
			return err
		}
		for _, want := range gen.Proposed.Partitions {
			if got := md.Topics["move"].Partitions[want.Partition].Replicas; !slices.Equal(got, want.Replicas) {
				return fmt.Errorf("move-%d: replicas %v after the plan, want %v", want.Partition, got, want.Replicas)
			}
		}
		return nil
	})

	// Retiring broker 4 (it hosts none of "move" any more): stop it,
	// unregister it; Metadata no longer lists it.
	if err := bs[3].Close(); err != nil {
		t.Fatal(err)
	}
	ureq := kmsg.NewPtrUnregisterBrokerRequest()
	ureq.BrokerID = 4
	uresp, err := ureq.RequestWith(ctx, newClient(t, joinSeeds(seeds[:3])))
	if err != nil || uresp.ErrorCode != 0 {
		t.Fatalf("unregister broker 4: %+v %v", uresp, err)
	}
	eventually(t, 10*time.Second, func() error {
		md, err := newAdmin(t, joinSeeds(seeds[:3])).BrokerMetadata(ctx)
		if err != nil {
			return err
		}
		for _, b := range md.Brokers {
			if b.NodeID == 4 {
				return fmt.Errorf("broker 4 still listed: %v", md.Brokers)
			}
		}
		return nil
	})
}

// reassignmentJSON is kafka-reassign-partitions.sh's plan.
type reassignmentJSON struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Replicas  []int32 `json:"replicas"`
	} `json:"partitions"`
}

// A throttled move (KIP-73), started with the command line as
// kafka-reassign-partitions.sh --throttle: per-broker leader and follower
// replication throttles of 1 MiB/s and the topic's throttled replicas (the
// current ones as leaders, the added one as follower). The new replica
// fetches at the bound, measured by its replication bytes-in counter over
// the steady part of the move, within 0.8 and 1.1 of it; --verify, once the move is
// done, removes every throttle.
func TestThrottledReassignmentRate(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	bs := make([]*broker.Broker, len(nodes))
	for i, n := range nodes {
		// Three one-second windows (Kafka's default is eleven), and
		// 64 KiB fetches waiting at most 100 ms, so the rate settles
		// within the test and is not quantised by long polls.
		bs[i] = startInProcessNode(t, n, nodes, "replication.quota.window.num=3", "replica.fetch.max.bytes=65536", "replica.fetch.wait.max.ms=100")
		b := bs[i]
		t.Cleanup(func() { b.Close() })
	}
	waitReady(t, bs...)
	seeds := joinSeeds([]string{nodes[0].seed(), nodes[1].seed(), nodes[2].seed()})
	createWithAssignment(t, nodes[0].seed(), "slow", [][]int32{{1, 2}}, nil)
	adm := newAdmin(t, seeds)
	waitISR(t, adm, "slow", 1, 2)
	ctx := ctxTimeout(t, 2*time.Minute)
	prod := newClient(t, seeds, kgo.DefaultProduceTopic("slow"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 1024)
	for range 16 << 10 { // 16 MiB of values
		prod.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	replIn := func() float64 {
		var v float64
		for _, m := range gatherMetric(t, bs[2], "kafka_server_brokertopicmetrics_replicationbytesin_total") {
			v += m.GetCounter().GetValue() // broker 3 follows only this partition
		}
		return v
	}
	const rate = 1 << 20
	cli := &cliCluster{brokers: seeds}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	os.WriteFile(planFile, []byte(`{"version":1,"partitions":[{"topic":"slow","partition":0,"replicas":[1,3]}]}`), 0o644)
	out := cli.ok(t, nil, "cluster", "reassign", "--execute", "--reassignment-json-file", planFile, "--throttle", fmt.Sprint(rate))
	if !strings.Contains(out, "The inter-broker throttle limit was set to 1048576 B/s") {
		t.Fatalf("execute:\n%s", out)
	}
	described, err := adm.DescribeTopicConfigs(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := described.On("slow", nil); err != nil || !hasConfig(c.Configs, "leader.replication.throttled.replicas", "0:1,0:2") ||
		!hasConfig(c.Configs, "follower.replication.throttled.replicas", "0:3") {
		t.Fatalf("topic throttles after --execute: %+v %v", c, err)
	}
	// Past the first windows (the burst a sampled rate allows), over
	// eight seconds.
	got := throttledRate(t, replIn, 8*time.Second)
	t.Logf("throttled move: broker 3 replicated %.0f B/s (bound %d B/s)", got, rate)
	// Above the bound is a defect; below it, the follower's fetches are
	// quantised (a throttled fetch waits out replica.fetch.wait.max.ms),
	// and runs settle at 0.93 to 0.98 of it: 0.8 says the move is not
	// starved without failing a loaded machine.
	if got < 0.8*rate || got > 1.1*rate {
		t.Fatalf("replication rate %.0f B/s, want within 0.8 and 1.1 of %d", got, rate)
	}
	eventually(t, 60*time.Second, func() error {
		if r := cli.moldau(t, nil, "cluster", "reassign", "--verify", "--reassignment-json-file", planFile); r.code != 0 {
			return fmt.Errorf("verify: %s%s", r.stdout, r.stderr)
		}
		return nil
	})
	// --verify's removal was answered by the broker that forwarded it,
	// once its own metadata had it; the broker DescribeConfigs reaches
	// may be a moment behind.
	eventually(t, 10*time.Second, func() error {
		described, err := adm.DescribeTopicConfigs(ctx, "slow")
		if err != nil {
			return err
		}
		if c, _ := described.On("slow", nil); hasConfig(c.Configs, "leader.replication.throttled.replicas", "0:1,0:2") {
			return fmt.Errorf("topic throttles left after --verify: %+v", c.Configs)
		}
		bc, err := adm.DescribeBrokerConfigs(ctx, 3)
		if err != nil {
			return err
		}
		for _, r := range bc {
			for _, c := range r.Configs {
				if c.Key == "leader.replication.throttled.rate" && c.Source == kmsg.ConfigSourceDynamicBrokerConfig {
					return fmt.Errorf("broker throttle left after --verify: %+v", c)
				}
			}
		}
		return nil
	})
}

// throttledRate measures how fast bytes grows, in bytes a second, over
// the given time once it has grown and three seconds have passed (the
// burst a sampled rate allows in its first windows).
func throttledRate(t *testing.T, bytes func() float64, over time.Duration) float64 {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		if bytes() == 0 {
			return fmt.Errorf("the moving replicas have not started fetching")
		}
		return nil
	})
	time.Sleep(3 * time.Second) // measuring a rate over time: the wait is the measurement
	from, t0 := bytes(), time.Now()
	time.Sleep(over)
	return (bytes() - from) / time.Since(t0).Seconds()
}

func hasConfig(cs []kadm.Config, key, value string) bool {
	for _, c := range cs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

// seqGroupConsumer is a consumer group member that counts the sequence
// numbers (sequenceProducer's) it reads and commits after every poll.
type seqGroupConsumer struct {
	cl           *kgo.Client
	group, topic string
	mu           sync.Mutex
	seen         map[uint64]int
	stop         context.CancelFunc
	done         chan struct{}
}

func startSeqGroupConsumer(t *testing.T, ctx context.Context, seeds, group, topic string) *seqGroupConsumer {
	g := &seqGroupConsumer{group: group, topic: topic, seen: map[uint64]int{}, done: make(chan struct{})}
	g.cl = newClient(t, seeds, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	cctx, stop := context.WithCancel(ctx)
	g.stop = stop
	go func() {
		defer close(g.done)
		for cctx.Err() == nil {
			fs := g.cl.PollFetches(cctx)
			fs.EachRecord(func(r *kgo.Record) {
				g.mu.Lock()
				g.seen[binary.BigEndian.Uint64(r.Value)]++
				g.mu.Unlock()
			})
			if err := g.cl.CommitUncommittedOffsets(cctx); err != nil && cctx.Err() == nil {
				t.Logf("commit: %v", err)
			}
		}
	}()
	t.Cleanup(func() { stop(); <-g.done })
	return g
}

// readExactlyOnce waits until the group has read every acknowledged
// record and committed its topic's end offsets, then stops it and checks
// that it read each acknowledged record once and nothing else.
func (g *seqGroupConsumer) readExactlyOnce(t *testing.T, ctx context.Context, adm *kadm.Client, acked []ackedRecord) {
	t.Helper()
	ends := map[int32]int64{}
	for _, a := range acked {
		ends[a.partition] = max(ends[a.partition], a.offset+1)
	}
	eventually(t, 60*time.Second, func() error {
		g.mu.Lock()
		n := len(g.seen)
		g.mu.Unlock()
		if n < len(acked) {
			return fmt.Errorf("the group read %d of %d records", n, len(acked))
		}
		committed, err := adm.FetchOffsets(ctx, g.group)
		if err != nil {
			return err
		}
		for p, end := range ends {
			if o, ok := committed.Lookup(g.topic, p); !ok || o.At != end {
				return fmt.Errorf("%s-%d: committed %+v, end %d", g.topic, p, o, end)
			}
		}
		return nil
	})
	g.stop()
	<-g.done
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, a := range acked {
		if g.seen[a.seq] != 1 {
			t.Fatalf("the group read acknowledged record %d %d times", a.seq, g.seen[a.seq])
		}
	}
	if len(g.seen) != len(acked) {
		t.Fatalf("the group read %d distinct records, %d were acknowledged", len(g.seen), len(acked))
	}
}

// reassign starts moving topic's partitions to the given replicas.
func reassign(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, replicas [][]int32) {
	t.Helper()
	req := kadm.AlterPartitionAssignmentsReq{}
	for p, rs := range replicas {
		req.Assign(topic, int32(p), rs)
	}
	if err := assignAll(ctx, adm, req); err != nil {
		t.Fatal(err)
	}
}

// assignAll sends req and returns the first partition's error.
func assignAll(ctx context.Context, adm *kadm.Client, req kadm.AlterPartitionAssignmentsReq) error {
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			return fmt.Errorf("reassign %s-%d: %w", r.Topic, r.Partition, r.Err)
		}
	}
	return nil
}

// waitReplicas waits until no partition of topic is reassigning and each
// has the given replicas (in order), a leader among them and isr
// replicas in sync.
func waitReplicas(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, replicas [][]int32, isr int) {
	t.Helper()
	eventually(t, 90*time.Second, func() error {
		set := kadm.TopicsSet{}
		for p := range replicas {
			set.Add(topic, int32(p))
		}
		listed, err := adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			return err
		}
		if n := len(listed.Sorted()); n > 0 {
			return fmt.Errorf("%d partitions of %s still reassigning", n, topic)
		}
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		for p, want := range replicas {
			pd := md.Topics[topic].Partitions[int32(p)]
			if !slices.Equal(pd.Replicas, want) || !slices.Contains(want, pd.Leader) || len(pd.ISR) != isr {
				return fmt.Errorf("%s-%d: replicas %v leader %d ISR %v, want replicas %v", topic, p, pd.Replicas, pd.Leader, pd.ISR, want)
			}
		}
		return nil
	})
}

// dirsGone says which of the nodes still has a directory of topic's
// partitions.
func dirsGone(nodes []clusterNode, topic string, partitions int) error {
	for _, n := range nodes {
		for p := range partitions {
			if _, err := os.Stat(filepath.Join(n.dir, fmt.Sprintf("%s-%d", topic, p))); err == nil {
				return fmt.Errorf("broker %d still has %s-%d", n.id, topic, p)
			}
		}
	}
	return nil
}

// logHoldsOnce checks that topic's log holds each acknowledged record
// once and nothing else.
func logHoldsOnce(t *testing.T, ctx context.Context, seeds, topic string, acked []ackedRecord) {
	t.Helper()
	inLog := countValues(t, ctx, seeds, topic)
	for _, a := range acked {
		if inLog[a.seq] != 1 {
			t.Fatalf("acknowledged record %d is in the log %d times", a.seq, inLog[a.seq])
		}
	}
	if len(inLog) != len(acked) {
		t.Fatalf("%d distinct records in the log, %d acknowledged", len(inLog), len(acked))
	}
}
