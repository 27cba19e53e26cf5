package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Records produced with every codec and acks level read back in order with
// contiguous offsets.
func TestProduceConsumeRoundTrip(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, 60*time.Second)
	const partitions, perPartition = 4, 500
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		for ai, acks := range []kgo.Acks{kgo.AllISRAcks(), kgo.LeaderAck(), kgo.NoAck()} {
			topic := fmt.Sprintf("rt-%s-%d", name, ai)
			if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			opts := []kgo.Opt{kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(acks), kgo.RecordPartitioner(kgo.ManualPartitioner())}
			if acks != kgo.AllISRAcks() {
				opts = append(opts, kgo.DisableIdempotentWrite())
			}
			p := newClient(t, b.Seed(), opts...)
			var rs []*kgo.Record
			for part := int32(0); part < partitions; part++ {
				for i := 0; i < perPartition; i++ {
					rs = append(rs, &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprint(i)), Value: binary.BigEndian.AppendUint64(nil, uint64(i))})
				}
			}
			if err := p.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", topic, err)
			}
			c := newClient(t, b.Seed(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			next := make(map[int32]int64)
			for total := 0; total < partitions*perPartition; {
				fs := c.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("%s: poll: %v", topic, err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					if r.Offset != next[r.Partition] {
						t.Fatalf("%s: partition %d: offset %d, want %d", topic, r.Partition, r.Offset, next[r.Partition])
					}
					if got := binary.BigEndian.Uint64(r.Value); int64(got) != r.Offset {
						t.Fatalf("%s: partition %d offset %d holds record %d", topic, r.Partition, r.Offset, got)
					}
					next[r.Partition]++
					total++
				})
			}
		}
	}
}

// A long poll returns as soon as a produce arrives, and at
// fetch.max.wait.ms when nothing comes.
func TestLongPoll(t *testing.T) {
	b := startBroker(t, "")
	ctx := ctxTimeout(t, 60*time.Second)
	if _, err := newAdmin(t, b.Seed()).CreateTopic(ctx, 1, 1, nil, "lp"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b.Seed())
	topicID := describeTopic(t, newAdmin(t, b.Seed()), "lp").ID

	fetch := func(maxWait time.Duration) (*kmsg.FetchResponse, time.Duration) {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = int32(maxWait / time.Millisecond)
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "lp", topicID // kgo picks the version: name or ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset = 0
		rp.PartitionMaxBytes = 1 << 20
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		start := time.Now()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp, time.Since(start)
	}

	// Nothing arrives: the fetch waits out fetch.max.wait.ms.
	resp, took := fetch(400 * time.Millisecond)
	if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
	if took < 350*time.Millisecond || took > 5*time.Second {
		t.Fatalf("empty long poll took %v, want about fetch.max.wait.ms = 400ms", took)
	}

	// A produce during a 30 s long poll wakes it: once the fetch waits in
	// the purgatory (its gauge says so), produce, and time from there.
	p := newClient(t, b.Seed(), kgo.ProducerLinger(0))
	produced := make(chan time.Time, 1)
	go func() {
		metrics := b.MetricsAddr().String()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if v, _ := metric(scrape(t, metrics), `kafka_server_delayedoperationpurgatory_purgatorysize{delayedOperation="Fetch"}`); v > 0 {
				break
			}
		}
		produced <- time.Now()
		p.ProduceSync(context.Background(), &kgo.Record{Topic: "lp", Value: []byte("wake")})
	}()
	resp, _ = fetch(30 * time.Second)
	answered := time.Now()
	if len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatal("long poll returned no records")
	}
	if after := answered.Sub(<-produced); after > 5*time.Second {
		t.Fatalf("long poll answered %v after the produce", after)
	} else {
		t.Logf("long poll answered %v after the produce started", after)
	}
}
