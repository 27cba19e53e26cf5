package integration

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Eligible leader replicas (KIP-966) as processes: three brokers, a topic
// with replication factor 3 and min.insync.replicas 2. Broker 3 stops
// (cleanly) and acks=all records go on with the ISR {1,2}; broker 2 stops
// cleanly too, leaving the ISR {1} below min.insync.replicas, so 2 stays
// eligible and the high watermark stands still while 1 takes acks=1
// records; then the last ISR member, broker 1, is killed. Without ELR the
// partition would wait for broker 1 (or, with unclean election, could
// elect broker 3, which lacks records acknowledged while it was down).
// With ELR, brokers 2 and 3 come back, 2 leads with every acknowledged
// record, 3 joins, and acks=all writes go on without broker 1. When 1
// returns after its unclean shutdown it follows, its unreplicated acks=1
// tail is truncated, and the three logs are byte-identical.
func TestEligibleLeaderReplicaLeadsAfterLastISRMemberDies(t *testing.T) {
	nodes := newClusterNodes(t, 3)
	procs, start := startClusterProcesses(t, nodes, "replica.lag.time.max.ms=3000")
	seeds := []string{nodes[0].seed(), nodes[1].seed(), nodes[2].seed()}
	ctx := ctxTimeout(t, 4*time.Minute)
	adm := newAdmin(t, joinSeeds(seeds))
	createWithAssignment(t, seeds[0], "elr", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	waitISR(t, adm, "elr", 1, 3)

	var mu sync.Mutex
	ackedAll, ackedOne := map[uint64]bool{}, map[uint64]bool{}
	produce := func(cl *kgo.Client, from, n uint64, into map[uint64]bool) {
		t.Helper()
		for s := from; s < from+n; s++ {
			v := make([]byte, 8)
			binary.BigEndian.PutUint64(v, s)
			cl.Produce(ctx, &kgo.Record{Topic: "elr", Value: v}, func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					into[binary.BigEndian.Uint64(r.Value)] = true
					mu.Unlock()
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	isr := func(want ...int32) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			md, err := adm.Metadata(ctx, "elr")
			if err != nil {
				return err
			}
			pd := md.Topics["elr"].Partitions[0]
			got := slices.Sorted(slices.Values(pd.ISR))
			if pd.Leader != want[0] || !slices.Equal(got, slices.Sorted(slices.Values(want))) {
				return fmt.Errorf("leader %d ISR %v, want leader %d ISR %v", pd.Leader, pd.ISR, want[0], want)
			}
			return nil
		})
	}
	all := func(seed string) *kgo.Client {
		return newClient(t, seed, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(90*time.Second))
	}
	produce(all(joinSeeds(seeds)), 0, 1000, ackedAll)

	procs[2].stop(t)
	isr(1, 2)
	produce(all(joinSeeds(seeds[:2])), 1000, 1000, ackedAll) // broker 3 lacks these
	procs[1].stop(t)
	isr(1)
	// DescribeTopicPartitions names broker 2 eligible (Metadata cannot).
	dreq := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	dt.Topic = "elr"
	dreq.Topics = append(dreq.Topics, dt)
	dresp, derr := dreq.RequestWith(ctx, newClient(t, seeds[0]))
	if derr != nil {
		t.Fatal(derr)
	}
	if got := dresp.Topics[0].Partitions[0].EligibleLeaderReplicas; !slices.Equal(got, []int32{2}) {
		t.Fatalf("eligible leader replicas %v with the ISR {1}, want [2]", got)
	}
	one := newClient(t, seeds[0], kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	produce(one, 100_000, 100, ackedOne)
	end, err := adm.ListEndOffsets(ctx, "elr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("elr", 0); o.Offset != 2000 {
		t.Fatalf("high watermark %d with the ISR below min.insync.replicas, want it to stay at 2000", o.Offset)
	}
	procs[0].kill(t)
	killed := time.Now()

	start(1)
	start(2)
	procs[1].waitStarted(t)
	procs[2].waitStarted(t)
	rest := newAdmin(t, joinSeeds(seeds[1:]))
	eventually(t, 60*time.Second, func() error {
		md, err := rest.Metadata(ctx, "elr")
		if err != nil {
			return err
		}
		if pd := md.Topics["elr"].Partitions[0]; pd.Leader != 2 || len(pd.ISR) != 2 {
			return fmt.Errorf("leader %d ISR %v", pd.Leader, pd.ISR)
		}
		return nil
	})
	t.Logf("broker 2 (eligible) leads, broker 3 in the ISR, %v after the last ISR member was killed", time.Since(killed).Round(100*time.Millisecond))
	produce(all(joinSeeds(seeds[1:])), 2000, 1000, ackedAll)

	start(0)
	procs[0].waitStarted(t)
	waitISR(t, adm, "elr", 1, 3)
	produce(all(joinSeeds(seeds)), 3000, 1000, ackedAll)

	seen := countValues(t, ctx, joinSeeds(seeds), "elr")
	mu.Lock()
	defer mu.Unlock()
	if len(ackedAll) != 4000 {
		t.Fatalf("%d of 4000 acks=all records acknowledged", len(ackedAll))
	}
	for s := range ackedAll {
		if seen[s] != 1 {
			t.Fatalf("acks=all record %d read %d times", s, seen[s])
		}
	}
	lostOne := 0
	for s := range ackedOne {
		if seen[s] == 0 {
			lostOne++
		}
	}
	if lostOne != len(ackedOne) {
		t.Fatalf("%d of the %d acks=1 records above the high watermark survived the election of broker 2, which never had them", len(ackedOne)-lostOne, len(ackedOne))
	}
	t.Logf("4000 acks=all records present once; %d acks=1 records taken while the ISR was below min.insync.replicas, never committed, lost (Kafka's acks=1 semantics)", lostOne)
	kcatAgrees(t, seeds, adm, "elr", 1)
	eventually(t, 30*time.Second, func() error {
		first := segmentBytes(nodes[0], "elr", 0)
		for _, n := range nodes[1:] {
			if other := segmentBytes(n, "elr", 0); !bytes.Equal(first, other) {
				return fmt.Errorf("node 1 has %d bytes, node %d %d", len(first), n.id, len(other))
			}
		}
		return nil
	})
}

// createWithAssignment creates a topic whose partitions have the replicas
// given (the first of each is its preferred leader).
func createWithAssignment(t testing.TB, seed, topic string, assignment [][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, r := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxTimeout(t, 30*time.Second), newClient(t, seed))
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}
