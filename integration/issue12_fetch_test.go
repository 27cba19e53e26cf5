package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A ping-pong over TCP between two connections: one long-polls at offset
// n, the other produces record n the instant the fetch is sent. Thousands
// of round trips; no fetch may wait out its fetch.max.wait.ms while the
// record it asked for is in the log (issue 12, point 1: segmentio's Conn
// long-polls for ~24 days and stalled for good).
func TestLongPollPingPong(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, 5*time.Minute)
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, nil, "pingpong"); err != nil {
		t.Fatal(err)
	}
	topicID := describeTopic(t, newAdmin(t, b.Seed()), "pingpong").ID
	consumer := newClient(t, b.Seed())
	producer := newClient(t, b.Seed(), kgo.ProducerLinger(0), kgo.DefaultProduceTopic("pingpong"))
	// Warm both connections up.
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	const maxWait = 5 * time.Second
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	fetchReq := func(offset int64) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = int32(maxWait / time.Millisecond)
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "pingpong", topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset = offset
		rp.PartitionMaxBytes = 1 << 20
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	var slowest time.Duration
	for n := int64(1); n <= int64(rounds); n++ {
		produced := make(chan error, 1)
		go func() {
			produced <- producer.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr()
		}()
		start := time.Now()
		resp, err := fetchReq(n).RequestWith(ctx, consumer)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if perr := <-produced; perr != nil {
			t.Fatal(perr)
		}
		slowest = max(slowest, took)
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatal(err)
		}
		if took >= maxWait/2 {
			t.Fatalf("round trip %d: the fetch at offset %d waited %v (fetch.max.wait.ms %v) though the record was produced at once; high watermark %d",
				n, n, took.Round(time.Millisecond), maxWait, p.HighWatermark)
		}
		if len(p.RecordBatches) == 0 {
			t.Fatalf("round trip %d: the fetch answered early with no records (high watermark %d)", n, p.HighWatermark)
		}
	}
	t.Logf("%d round trips, slowest fetch %v", rounds, slowest)
}
