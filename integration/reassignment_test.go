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
	var wg sync.WaitGroup
	seen := map[uint64]int{}
	var seenMu sync.Mutex
	cons := newClient(t, joinSeeds(seeds), kgo.ConsumerGroup("movers"), kgo.ConsumeTopics("move"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	wg.Add(1)
	cctx, stopConsumer := context.WithCancel(ctx)
	go func() {
		defer wg.Done()
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			fs.EachRecord(func(r *kgo.Record) {
				seenMu.Lock()
				seen[binary.BigEndian.Uint64(r.Value)]++
				seenMu.Unlock()
			})
			if err := cons.CommitUncommittedOffsets(cctx); err != nil && cctx.Err() == nil {
				t.Logf("commit: %v", err)
			}
		}
	}()
	sp.waitAcked(t, 5000, 30*time.Second)

	req := kadm.AlterPartitionAssignmentsReq{}
	for p := range int32(partitions) {
		req.Assign("move", p, []int32{3, 4})
	}
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			t.Fatalf("reassign %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})
	started := time.Now()
	eventually(t, 90*time.Second, func() error {
		moving := kadm.TopicsSet{}
		for p := range int32(partitions) {
			moving.Add("move", p)
		}
		listed, err := adm.ListPartitionReassignments(ctx, moving)
		if err != nil {
			return err
		}
		if n := len(listed.Sorted()); n > 0 {
			return fmt.Errorf("%d partitions still reassigning", n)
		}
		md, err := adm.Metadata(ctx, "move")
		if err != nil {
			return err
		}
		for p := range int32(partitions) {
			pd := md.Topics["move"].Partitions[p]
			if got := slices.Sorted(slices.Values(pd.Replicas)); !slices.Equal(got, []int32{3, 4}) || (pd.Leader != 3 && pd.Leader != 4) || len(pd.ISR) != 2 {
				return fmt.Errorf("move-%d: replicas %v leader %d ISR %v", p, pd.Replicas, pd.Leader, pd.ISR)
			}
		}
		return nil
	})
	t.Logf("three partitions moved from brokers {1,2} to {3,4} in %v under load", time.Since(started).Round(10*time.Millisecond))
	// The old replicas are gone from brokers 1 and 2.
	eventually(t, 30*time.Second, func() error {
		for _, n := range nodes[:2] {
			for p := range partitions {
				if _, err := os.Stat(filepath.Join(n.dir, fmt.Sprintf("move-%d", p))); err == nil {
					return fmt.Errorf("broker %d still has move-%d", n.id, p)
				}
			}
		}
		return nil
	})
	sp.stopAndFlush(t, ctx, prod)
	acked, failed := sp.results()
	if len(failed) > 0 {
		t.Fatalf("%d records not acknowledged, the first: %v", len(failed), failed[0])
	}
	total := len(acked)
	eventually(t, 60*time.Second, func() error {
		seenMu.Lock()
		defer seenMu.Unlock()
		if len(seen) < total {
			return fmt.Errorf("consumed %d of %d", len(seen), total)
		}
		return nil
	})
	stopConsumer()
	wg.Wait()
	// The log holds every acknowledged record exactly once.
	inLog := countValues(t, ctx, joinSeeds(seeds), "move")
	var want int64
	for _, n := range inLog {
		want += int64(n)
	}
	for _, a := range acked {
		if inLog[a.seq] != 1 {
			t.Fatalf("acknowledged record %d is in the log %d times", a.seq, inLog[a.seq])
		}
	}
	if int64(len(acked)) != want {
		t.Fatalf("%d records in the log, %d acknowledged", want, len(acked))
	}
	t.Logf("%d records acknowledged, each in the log once; the group consumed them all", total)
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
// the steady part of the move, within 10 %; --verify, once the move is
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
	start := time.Now()
	eventually(t, 30*time.Second, func() error {
		if replIn() == 0 {
			return fmt.Errorf("broker 3 has not started fetching")
		}
		return nil
	})
	time.Sleep(3 * time.Second) // measuring a rate over time: the wait is the measurement
	from, t0 := replIn(), time.Now()
	time.Sleep(8 * time.Second)
	got := (replIn() - from) / time.Since(t0).Seconds()
	t.Logf("throttled move: broker 3 replicated %.0f B/s (bound %d B/s) between %.1f s and %.1f s into the move",
		got, rate, t0.Sub(start).Seconds(), time.Since(start).Seconds())
	if got < 0.9*rate || got > 1.1*rate {
		t.Fatalf("replication rate %.0f B/s, want within 10%% of %d", got, rate)
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

func hasConfig(cs []kadm.Config, key, value string) bool {
	for _, c := range cs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}
