package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reassignment on separate roles: three controller-only and six
// broker-only processes (ids 4-9), every decision taken by a controller
// that hosts no partition and reached over the network.
//
//   - An RF-3 topic moves from brokers {4,5,6} to {7,8,9} under an
//     idempotent acks=all producer and a consumer group: every
//     acknowledged record is read once by the group, which commits the
//     end offsets, and is in the log once.
//   - A second, throttled move (the command line's --throttle, 1 MiB/s)
//     replicates at the throttle's rate, within 10 %, and is cancelled
//     mid-way (--cancel, which clears the throttles): the original
//     replicas keep serving, the new ones are deleted.
//   - Broker 9 is retired: its replicas (the topics' and
//     __consumer_offsets') move away, it stops, UnregisterBroker removes
//     it and Metadata no longer lists it.
//
// TestReassignmentUnderLoad and TestThrottledReassignmentRate check the
// same logic on combined nodes in more detail.
func TestSeparateRolesReassignment(t *testing.T) {
	// Three one-second quota windows and 64 KiB fetches waiting at most
	// 100 ms, as TestThrottledReassignmentRate, so the throttled rate
	// settles within the test.
	c := startRolesCluster(t, 6, "replication.quota.window.num=3", "replica.fetch.max.bytes=65536", "replica.fetch.wait.max.ms=100")
	seeds := c.seeds()
	adm := newAdmin(t, joinSeeds(seeds))
	ctx := ctxTimeout(t, 3*time.Minute)

	// 1. {4,5,6} -> {7,8,9} under load.
	createWithAssignment(t, seeds[0], "move", [][]int32{{4, 5, 6}, {5, 6, 4}}, nil)
	waitISR(t, adm, "move", 2, 3)
	prod := newClient(t, joinSeeds(seeds), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("move"),
		kgo.RecordDeliveryTimeout(2*time.Minute))
	sp := startSequenceProducer(ctx, prod, 200, 100)
	group := startSeqGroupConsumer(t, ctx, joinSeeds(seeds), "movers", "move")
	sp.waitAcked(t, 2000, 30*time.Second)
	reassign(t, ctx, adm, "move", [][]int32{{7, 8, 9}, {8, 9, 7}})
	waitReplicas(t, ctx, adm, "move", [][]int32{{7, 8, 9}, {8, 9, 7}}, 3)
	sp.waitAcked(t, 1000, 30*time.Second) // and on the new replicas
	acked := sp.stopAndCheck(t, ctx, prod)
	group.readExactlyOnce(t, ctx, adm, acked)
	logHoldsOnce(t, ctx, joinSeeds(seeds), "move", acked)
	eventually(t, 30*time.Second, func() error { return dirsGone(c.brokers[:3], "move", 2) })
	t.Logf("%d records acknowledged through the move, each read once by the group and in the log once", len(acked))

	// 2. A throttled move of 7 MiB per replica, cancelled mid-way.
	createWithAssignment(t, seeds[0], "slow", [][]int32{{7, 8, 9}}, nil)
	waitISR(t, adm, "slow", 1, 3)
	bulk := newClient(t, joinSeeds(seeds), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("slow"),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 1024)
	for range 7 << 10 {
		bulk.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := bulk.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const rate = 1 << 20
	cli := &cliCluster{brokers: joinSeeds(seeds)}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	os.WriteFile(planFile, []byte(`{"version":1,"partitions":[{"topic":"slow","partition":0,"replicas":[4,5,6]}]}`), 0o644)
	if out := cli.ok(t, nil, "cluster", "reassign", "--execute", "--reassignment-json-file", planFile, "--throttle", fmt.Sprint(rate)); !strings.Contains(out, "The inter-broker throttle limit was set to 1048576 B/s") {
		t.Fatalf("execute:\n%s", out)
	}
	// The leader's throttle bounds what the three new replicas fetch
	// together: the move's rate is the growth of their logs.
	moved := func() float64 {
		var n int64
		for _, b := range c.brokers[:3] {
			n += logBytes(filepath.Join(b.dir, "slow-0"))
		}
		return float64(n)
	}
	got := throttledRate(t, moved, 8*time.Second)
	t.Logf("throttled move: %.0f B/s (bound %d B/s); %.0f of %d bytes moved", got, rate, moved(), 3*logBytes(filepath.Join(c.brokers[3].dir, "slow-0")))
	// Within 0.8 and 1.1 of the bound, as TestThrottledReassignmentRate.
	if got < 0.8*rate || got > 1.1*rate {
		t.Errorf("replication rate %.0f B/s, want within 0.8 and 1.1 of %d", got, rate)
	}
	if listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"slow": {0: {}}}); err != nil || len(listed.Sorted()) != 1 {
		t.Fatalf("the throttled move ended before it was cancelled: %v %v", listed, err)
	}
	// --cancel, as Kafka's tool, also clears the throttles.
	if out := cli.ok(t, nil, "cluster", "reassign", "--cancel", "--reassignment-json-file", planFile); !strings.Contains(out, "Successfully cancelled partition reassignment") ||
		!strings.Contains(out, "Clearing topic-level throttles on topics slow") {
		t.Fatalf("cancel:\n%s", out)
	}
	waitReplicas(t, ctx, adm, "slow", [][]int32{{7, 8, 9}}, 3)
	eventually(t, 10*time.Second, func() error {
		described, err := adm.DescribeTopicConfigs(ctx, "slow")
		if err != nil {
			return err
		}
		if tc, _ := described.On("slow", nil); hasConfig(tc.Configs, "leader.replication.throttled.replicas", "0:7,0:8,0:9") {
			return fmt.Errorf("topic throttles left after --cancel: %+v", tc.Configs)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error { return dirsGone(c.brokers[:3], "slow", 1) })
	// The original replicas serve: acks=all and reads from the start.
	if err := bulk.ProduceSync(ctx, &kgo.Record{Value: []byte("after-cancel")}).FirstErr(); err != nil {
		t.Fatalf("produce after the cancel: %v", err)
	}
	if n := countRecords(t, ctx, joinSeeds(seeds), "slow"); n != 7<<10+1 {
		t.Fatalf("read %d records of slow after the cancel, want %d", n, 7<<10+1)
	}

	// 3. Retire broker 9: move its replicas away, stop it, unregister it.
	retire := int32(9)
	drain := kadm.AlterPartitionAssignmentsReq{}
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hosted := 0
	for _, td := range md.Topics {
		for _, pd := range td.Partitions {
			if i := slices.Index(pd.Replicas, retire); i >= 0 {
				rs := slices.Clone(pd.Replicas)
				for id := int32(4); id < retire; id++ {
					if !slices.Contains(rs, id) {
						rs[i] = id
						break
					}
				}
				drain.Assign(td.Topic, pd.Partition, rs)
				hosted++
			}
		}
	}
	if hosted == 0 {
		t.Fatal("broker 9 hosts no replica to move")
	}
	if err := assignAll(ctx, adm, drain); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if listed, err := adm.ListPartitionReassignments(ctx, nil); err != nil || len(listed.Sorted()) > 0 {
			return fmt.Errorf("still reassigning: %v %v", listed.Sorted(), err)
		}
		md, err := adm.Metadata(ctx)
		if err != nil {
			return err
		}
		for _, td := range md.Topics {
			for _, pd := range td.Partitions {
				if slices.Contains(pd.Replicas, retire) || pd.Leader == retire || len(pd.ISR) != len(pd.Replicas) {
					return fmt.Errorf("%s-%d: replicas %v leader %d ISR %v", td.Topic, pd.Partition, pd.Replicas, pd.Leader, pd.ISR)
				}
			}
		}
		return nil
	})
	t.Logf("broker 9's %d replicas moved away", hosted)
	c.procs[retire].stop(t)
	ucl := newClient(t, joinSeeds(seeds[:5]))
	eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = retire
		resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), ucl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		return err
	})
	eventually(t, 30*time.Second, func() error {
		// A new client each time: kgo answers a Metadata request from
		// its own recent metadata.
		md, err := newAdmin(t, joinSeeds(seeds[:5])).BrokerMetadata(ctx)
		if err != nil {
			return err
		}
		ids := md.Brokers.NodeIDs()
		slices.Sort(ids)
		if !slices.Equal(ids, []int32{4, 5, 6, 7, 8}) {
			return fmt.Errorf("Metadata lists brokers %v after unregistering 9", ids)
		}
		return nil
	})
}

// logBytes is the size of the segments (.log files) in a partition's
// directory, 0 if there is none.
func logBytes(dir string) int64 {
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var n int64
	for _, s := range segs {
		if fi, err := os.Stat(s); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// countRecords reads topic from the start to its high watermark and
// returns how many records it read.
func countRecords(t *testing.T, ctx context.Context, seeds, topic string) int {
	t.Helper()
	n := 0
	for _, c := range countValues(t, ctx, seeds, topic) {
		n += c
	}
	return n
}
