package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Three `moldau serve` processes, a topic with replication factor 3 and
// min.insync.replicas 2, an idempotent acks=all producer at full speed.
// Again and again a node is killed with SIGKILL (the leader of partition
// 0, a follower of it, or the active controller, in turn) and restarted
// after a random pause. At the end every acknowledged record is present
// exactly once and in order, and the replicas of each partition hold the
// same bytes up to the high watermark. MOLDAU_REPLICATION_KILLS sets the
// number of kills (default 20; 6 with -short).
func TestReplicationSurvivesKill9(t *testing.T) {
	kills := 20
	if testing.Short() {
		kills = 6
	}
	if v, err := strconv.Atoi(os.Getenv("MOLDAU_REPLICATION_KILLS")); err == nil {
		kills = v
	}
	const partitions = 3
	nodes := newClusterNodes(t, 3)
	procs, start := startClusterProcesses(t, nodes)
	seeds := []string{nodes[0].seed(), nodes[1].seed(), nodes[2].seed()}
	adm := kadm.NewClient(newClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	ctx := ctxTimeout(t, 10*time.Minute)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, "survive"); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, "survive", partitions, 3)

	prod := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("survive"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(time.Millisecond), kgo.RecordDeliveryTimeout(2*time.Minute), kgo.MaxBufferedRecords(20000))
	sp := startSequenceProducer(ctx, prod, 64, 50)
	progress := func(n int) { t.Helper(); sp.waitAcked(t, n, 90*time.Second) }
	progress(2000)

	var leaderless []time.Duration
	for k := range kills {
		var victim int
		switch k % 3 {
		case 0, 1: // the leader of partition 0, or a follower of it
			l, _ := partitionStateRetry(t, adm, "survive", 0)
			victim = int(l - 1)
			if k%3 == 1 {
				victim = (victim + 1 + rand.IntN(2)) % 3
			}
		case 2: // the active controller
			md, err := adm.BrokerMetadata(ctx)
			if err != nil || md.Controller < 1 {
				victim = rand.IntN(3)
			} else {
				victim = int(md.Controller - 1)
			}
		}
		killed := time.Now()
		procs[victim].kill(t)
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond) // the random pause the test is about
		start(victim)
		procs[victim].waitStarted(t)
		progress(500)
		leaderless = append(leaderless, time.Since(killed))
		kcatAgrees(t, seeds, adm, "survive", partitions)
	}
	sp.stopAndFlush(t, ctx, prod)
	waitISR(t, adm, "survive", partitions, 3)

	results, failed := sp.results()
	total, failedN := len(results), len(failed)
	acked := map[int32][]uint64{} // partition -> sequence numbers in offset order
	offsets := map[int32][]int64{}
	for _, a := range results {
		acked[a.partition] = append(acked[a.partition], a.seq)
		offsets[a.partition] = append(offsets[a.partition], a.offset)
	}
	for p, offs := range offsets {
		for i := 1; i < len(offs); i++ {
			if offs[i] <= offs[i-1] {
				t.Fatalf("survive-%d: acknowledged offsets not increasing: %d after %d", p, offs[i], offs[i-1])
			}
		}
	}
	t.Logf("%d kills; %d records acknowledged, %d failed (not acknowledged); time from each kill to 500 more acknowledgements: %v",
		kills, total, failedN, leaderless)

	// Every acknowledged record is read back exactly once, at its offset.
	cons := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"survive": {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}))
	got := map[int32]map[int64]uint64{}
	seen := map[uint64]int{}
	n := 0
	for n < total {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records: %v", n, total, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if got[r.Partition] == nil {
				got[r.Partition] = map[int64]uint64{}
			}
			v := binary.BigEndian.Uint64(r.Value)
			got[r.Partition][r.Offset] = v
			seen[v]++
			n++
		})
	}
	dups := 0
	for _, c := range seen {
		if c > 1 {
			dups++
		}
	}
	lost := 0
	for p, seqs := range acked {
		for i, s := range seqs {
			if got[p][offsets[p][i]] != s {
				lost++
			}
		}
	}
	t.Logf("losses %d, duplicates %d", lost, dups)
	if lost > 0 || dups > 0 {
		t.Fatalf("%d acknowledged records lost or moved, %d duplicated", lost, dups)
	}

	// The replicas hold the same bytes: stop the cluster cleanly and
	// compare each partition's segments up to the shortest (the high
	// watermark is where all three agree).
	for _, p := range procs {
		p.stop(t)
	}
	for p := range int32(partitions) {
		a := segmentBytes(nodes[0], "survive", p)
		for _, n := range nodes[1:] {
			b := segmentBytes(n, "survive", p)
			m := min(len(a), len(b))
			if m == 0 || !bytes.Equal(a[:m], b[:m]) {
				t.Fatalf("survive-%d: node 1 and node %d differ within their first %d bytes", p, n.id, m)
			}
		}
	}
}

// startClusterProcesses starts a `moldau serve` process for each node, with
// Kafka's KRaft settings, a short broker session (so that a killed broker
// is fenced in seconds) and extra overrides, and waits until all serve.
// start(i) starts node i again (its process in procs[i]).
func startClusterProcesses(t testing.TB, nodes []clusterNode, extra ...string) (procs []*brokerProcess, start func(i int)) {
	t.Helper()
	procs = make([]*brokerProcess, len(nodes))
	start = func(i int) {
		var args []string
		overrides := append(kraftOverrides(nodes[i], nodes), "moldau.metrics.listener=", "broker.session.timeout.ms=4000", "broker.heartbeat.interval.ms=500")
		for _, o := range append(overrides, extra...) {
			args = append(args, "--override", o)
		}
		procs[i] = launchProcess(t, nodes[i].seed(), args...)
	}
	for i := range nodes {
		start(i)
	}
	for _, p := range procs {
		p.waitStarted(t)
	}
	return procs, start
}

// partitionStateRetry is partitionState, retried while the partition has
// no leader.
func partitionStateRetry(t *testing.T, adm *kadm.Client, topic string, p int32) (int32, []int32) {
	t.Helper()
	var leader int32
	var isr []int32
	eventually(t, 60*time.Second, func() error {
		md, err := adm.Metadata(context.Background(), topic)
		if err != nil {
			return err
		}
		pd := md.Topics[topic].Partitions[p]
		leader, isr = pd.Leader, pd.ISR
		if leader < 1 {
			return fmt.Errorf("%s-%d has no leader", topic, p)
		}
		return nil
	})
	return leader, isr
}

// kcatAgrees checks that librdkafka's view of topic (kcat -L) names the
// same leader, replicas and ISR for every partition as the cluster's
// Metadata, once it is stable (both read again until they agree).
func kcatAgrees(t *testing.T, seeds []string, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		out, err := exec.Command("kcat", "-L", "-b", strings.Join(seeds, ","), "-t", topic, "-m", "10").CombinedOutput()
		if err != nil {
			return fmt.Errorf("kcat -L: %v: %s", err, out)
		}
		md, err := adm.Metadata(context.Background(), topic)
		if err != nil {
			return err
		}
		join := func(ids []int32) string {
			s := make([]string, len(ids))
			for i, id := range ids {
				s[i] = strconv.Itoa(int(id))
			}
			return strings.Join(s, ",")
		}
		for p := range partitions {
			pd := md.Topics[topic].Partitions[p]
			if len(pd.Replicas) == 0 || pd.Leader < 1 {
				return fmt.Errorf("%s-%d: leader %d replicas %v", topic, p, pd.Leader, pd.Replicas)
			}
			want := fmt.Sprintf("partition %d, leader %d, replicas: %s, isrs: %s", p, pd.Leader, join(pd.Replicas), join(pd.ISR))
			if !strings.Contains(string(out), want) {
				return fmt.Errorf("kcat -L does not show %q:\n%s", want, out)
			}
		}
		return nil
	})
}
