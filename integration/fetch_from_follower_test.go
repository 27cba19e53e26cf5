package integration

import (
	"encoding/binary"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/replica"
)

// topicBytesOut is a broker's kafka_server_brokertopicmetrics_bytesout_total
// for a topic: the record bytes it served to consumers.
func topicBytesOut(t *testing.T, b *broker.Broker, topic string) float64 {
	t.Helper()
	var v float64
	for _, m := range gatherMetric(t, b, "kafka_server_brokertopicmetrics_bytesout_total") {
		if label(m, "topic") == topic {
			v += m.GetCounter().GetValue()
		}
	}
	return v
}

// Fetch from the closest replica (KIP-392): three brokers in racks rack-1..3
// with Kafka's RackAwareReplicaSelector, a topic led by broker 1 with
// replicas on all three. A kgo consumer in rack-2 is sent to broker 2 and
// reads everything from it (broker 2's bytes-out grows by what it read,
// the leader's stays 0); librdkafka (kcat) in rack-3 reads from broker 3;
// a consumer without a rack reads from the leader. When broker 2 stops,
// the rack-2 consumer goes back to the leader (when it asks it again: kgo
// does so every RecheckPreferredReplicaInterval) and reads what follows.
func TestFetchFromClosestReplica(t *testing.T) {
	c := startReplicatedCluster(t, "replica.selector.class="+replica.RackAwareReplicaSelectorClass)
	seeds := joinSeeds(c.seeds())
	createWithAssignment(t, c.nodes[0].seed(), "near", [][]int32{{1, 2, 3}}, nil)
	adm := newAdmin(t, seeds)
	waitISR(t, adm, "near", 1, 3)
	ctx := ctxTimeout(t, 2*time.Minute)
	produce := func(from, n int) {
		t.Helper()
		p := newClient(t, seeds, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("near"), kgo.ProducerBatchCompression(kgo.NoCompression()))
		for i := from; i < from+n; i++ {
			v := make([]byte, 100)
			binary.BigEndian.PutUint64(v, uint64(i))
			p.Produce(ctx, &kgo.Record{Value: v}, nil)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(cl *kgo.Client, want int) {
		t.Helper()
		seen := map[uint64]bool{}
		for len(seen) < want {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d records: %v", len(seen), want, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) { seen[binary.BigEndian.Uint64(r.Value)] = true })
		}
	}
	produce(0, 1000)
	from := func(offset int64) kgo.Opt {
		return kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"near": {0: kgo.NewOffset().At(offset)}})
	}

	before := []float64{topicBytesOut(t, c.bs[0], "near"), topicBytesOut(t, c.bs[1], "near"), topicBytesOut(t, c.bs[2], "near")}
	// kgo goes back to the leader to ask again only every
	// RecheckPreferredReplicaInterval (the Java client also when its
	// replica is unreachable): a second here.
	near := newClient(t, seeds, from(0), kgo.Rack("rack-2"), kgo.RecheckPreferredReplicaInterval(time.Second))
	consume(near, 1000)
	if got := topicBytesOut(t, c.bs[1], "near") - before[1]; got < 1000*100 {
		t.Fatalf("broker 2 (rack-2) served %.0f bytes to the rack-2 consumer, want at least the 100,000 of the values", got)
	}
	if got := topicBytesOut(t, c.bs[0], "near") - before[0]; got != 0 {
		t.Fatalf("the leader served %.0f bytes to a consumer in another replica's rack", got)
	}

	// librdkafka, in rack-3, is sent to broker 3.
	mid := topicBytesOut(t, c.bs[2], "near")
	out, err := exec.Command("kcat", "-C", "-b", seeds, "-t", "near", "-p", "0", "-o", "beginning", "-c", "1000", "-e", "-q",
		"-X", "client.rack=rack-3", "-f", "%o\n").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "\n"); n != 1000 {
		t.Fatalf("kcat read %d records, want 1000", n)
	}
	if got := topicBytesOut(t, c.bs[2], "near") - mid; got < 1000*100 {
		t.Fatalf("broker 3 (rack-3) served %.0f bytes to kcat in rack-3", got)
	}

	// No rack: the leader serves.
	lead := topicBytesOut(t, c.bs[0], "near")
	consume(newClient(t, seeds, from(0)), 1000)
	if got := topicBytesOut(t, c.bs[0], "near") - lead; got < 1000*100 {
		t.Fatalf("the leader served %.0f bytes to a consumer without a rack", got)
	}

	// Broker 2 goes: the rack-2 consumer reads on from the leader.
	c.stop(1)
	eventually(t, 30*time.Second, func() error {
		md, err := newAdmin(t, joinSeeds(c.seeds())).Metadata(ctx, "near")
		if err != nil {
			return err
		}
		if isr := md.Topics["near"].Partitions[0].ISR; len(isr) != 2 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
	lead = topicBytesOut(t, c.bs[0], "near")
	produce(1000, 500)
	consume(near, 500)
	if got := topicBytesOut(t, c.bs[0], "near") - lead; got < 500*100 {
		t.Fatalf("after broker 2 stopped the leader served %.0f bytes to the rack-2 consumer", got)
	}
}
