package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker"
)

// startReplicatedCluster starts three in-process combined-mode nodes and
// waits until they serve; the returned function closes node i (a
// controlled shutdown), and restart starts it again on its data.
// Every node gets the config overrides.
type replicatedCluster struct {
	t         *testing.T
	nodes     []clusterNode
	bs        []*broker.Broker
	closed    []bool
	overrides []string
}

func startReplicatedCluster(t *testing.T, overrides ...string) *replicatedCluster {
	c := &replicatedCluster{t: t, nodes: newClusterNodes(t, 3), bs: make([]*broker.Broker, 3), closed: make([]bool, 3), overrides: overrides}
	for i, n := range c.nodes {
		c.bs[i] = startInProcessNode(t, n, c.nodes, overrides...)
	}
	t.Cleanup(func() {
		for i, b := range c.bs {
			if !c.closed[i] {
				b.Close()
			}
		}
	})
	waitReady(t, c.bs...)
	return c
}

func (c *replicatedCluster) stop(i int) {
	c.t.Helper()
	if err := c.bs[i].Close(); err != nil {
		c.t.Fatalf("closing node %d: %v", i+1, err)
	}
	c.closed[i] = true
}

func (c *replicatedCluster) restart(i int) {
	c.t.Helper()
	c.bs[i] = startInProcessNode(c.t, c.nodes[i], c.nodes, c.overrides...)
	c.closed[i] = false
	waitReady(c.t, c.bs[i])
}

// closeAll closes the running nodes together (one by one, the last would
// wait for a controlled shutdown that a quorum of one cannot give, 5 s);
// register it with t.Cleanup after starting the cluster.
func (c *replicatedCluster) closeAll() {
	var wg sync.WaitGroup
	for i, b := range c.bs {
		if !c.closed[i] {
			c.closed[i] = true
			wg.Add(1)
			go func() { defer wg.Done(); b.Close() }()
		}
	}
	wg.Wait()
}

func (c *replicatedCluster) seeds() []string {
	var s []string
	for i, n := range c.nodes {
		if !c.closed[i] {
			s = append(s, n.seed())
		}
	}
	return s
}

// partitionState is a partition's leader and ISR as Metadata tells them.
func partitionState(t *testing.T, adm *kadm.Client, topic string, p int32) (leader int32, isr []int32) {
	t.Helper()
	md, err := adm.Metadata(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	pd := md.Topics[topic].Partitions[p]
	return pd.Leader, pd.ISR
}

// waitISR waits until every partition of topic has the full ISR.
func waitISR(t testing.TB, adm *kadm.Client, topic string, partitions int32, want int) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		md, err := adm.Metadata(ctxTimeout(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		for p := range partitions {
			pd := md.Topics[topic].Partitions[p]
			if len(pd.ISR) != want || pd.Leader < 0 {
				return fmt.Errorf("%s-%d: leader %d, ISR %v", topic, p, pd.Leader, pd.ISR)
			}
		}
		return nil
	})
}

// segmentBytes returns the first segment of a partition on a node.
func segmentBytes(n clusterNode, topic string, p int32) []byte {
	b, _ := os.ReadFile(filepath.Join(n.dir, fmt.Sprintf("%s-%d", topic, p), "00000000000000000000.log"))
	return b
}

// Three brokers, a topic with replication factor 3 and
// min.insync.replicas 2: acks=all records reach every replica's log
// byte for byte; a leader stopping moves leadership to an in-sync
// follower and loses nothing acknowledged; the stopped broker comes back,
// catches up and rejoins the ISR.
func TestReplicationThreeNodes(t *testing.T) {
	const partitions, perRound = 3, 2000
	c := startReplicatedCluster(t)
	adm := newAdmin(t, c.nodes[0].seed())
	ctx := ctxTimeout(t, 3*time.Minute)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, "repl"); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, "repl", partitions, 3)

	produce := func(seeds []string, from, n int) {
		t.Helper()
		cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.DefaultProduceTopic("repl"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		defer cl.Close()
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			v := make([]byte, 8)
			binary.BigEndian.PutUint64(v, uint64(i))
			recs = append(recs, &kgo.Record{Value: v})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing records %d-%d: %v", from, from+n-1, err)
		}
	}
	produce(c.seeds(), 0, perRound)

	// Every replica holds the same bytes as the leader.
	eventually(t, 30*time.Second, func() error {
		for p := range int32(partitions) {
			first := segmentBytes(c.nodes[0], "repl", p)
			for _, n := range c.nodes[1:] {
				if other := segmentBytes(n, "repl", p); len(first) == 0 || !bytes.Equal(first, other) {
					return fmt.Errorf("repl-%d: node 1 has %d bytes, node %d %d bytes, not the same", p, len(first), n.id, len(other))
				}
			}
		}
		return nil
	})

	// The leader of partition 0 stops: another in-sync replica leads.
	leader, _ := partitionState(t, adm, "repl", 0)
	stopped := int(leader) - 1
	c.stop(stopped)
	adm = newAdmin(t, c.seeds()[0])
	eventually(t, 30*time.Second, func() error {
		l, isr := partitionState(t, adm, "repl", 0)
		if l < 0 || l == leader || slices.Contains(isr, leader) {
			return fmt.Errorf("repl-0: leader %d ISR %v after broker %d stopped", l, isr, leader)
		}
		return nil
	})
	produce(c.seeds(), perRound, perRound)

	// It comes back, catches up and rejoins every ISR.
	c.restart(stopped)
	adm = newAdmin(t, c.seeds()[0])
	waitISR(t, adm, "repl", partitions, 3)
	produce(c.seeds(), 2*perRound, perRound)

	// Everything acknowledged is there, exactly once, from any leader.
	consumeAll(t, ctx, c.seeds(), "repl", partitions, 3*perRound)
}

// consumeAll reads topic from the start until want records and checks
// each value (its sequence number) appears exactly once.
func consumeAll(t *testing.T, ctx context.Context, seeds []string, topic string, partitions int32, want int) {
	t.Helper()
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	for p := range partitions {
		offsets[topic][p] = kgo.NewOffset().AtStart()
	}
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(offsets))
	seen := make(map[uint64]bool, want)
	for len(seen) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", len(seen), want, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := binary.BigEndian.Uint64(r.Value)
			if seen[v] {
				t.Fatalf("record %d read twice (%s-%d offset %d)", v, r.Topic, r.Partition, r.Offset)
			}
			seen[v] = true
		})
	}
	for i := range uint64(want) {
		if !seen[i] {
			t.Fatalf("acknowledged record %d is missing", i)
		}
	}
}
