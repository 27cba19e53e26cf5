package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var errNotYet = errors.New("not yet")

// A rolling restart of all three brokers (each shut down in a controlled
// way, which moves its leaderships away first, then started again once the
// others lead) under an acks=all producer and a consumer group: the
// producer's application sees no error, and the group reads every
// acknowledged record.
func TestRollingRestartUnderLoad(t *testing.T) {
	const partitions = 3
	c := startReplicatedCluster(t)
	adm := newAdmin(t, c.nodes[0].seed())
	ctx := ctxTimeout(t, 4*time.Minute)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, "rolling"); err != nil {
		t.Fatal(err)
	}
	waitISR(t, adm, "rolling", partitions, 3)
	seeds := c.seeds()
	prod := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("rolling"), kgo.ProducerLinger(time.Millisecond), kgo.RecordDeliveryTimeout(2*time.Minute))
	sp := startSequenceProducer(ctx, prod, 16, 20)
	cons := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("rolling-group"), kgo.ConsumeTopics("rolling"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var consumed sync.Map
	consCtx, consCancel := context.WithCancel(ctx)
	var cwg sync.WaitGroup
	cwg.Add(1)
	go func() {
		defer cwg.Done()
		for consCtx.Err() == nil {
			fs := cons.PollFetches(consCtx)
			fs.EachRecord(func(r *kgo.Record) { consumed.Store(binary.BigEndian.Uint64(r.Value), true) })
		}
	}()
	waitAcked := func(n int) { t.Helper(); sp.waitAcked(t, n, 60*time.Second) }
	waitAcked(1000)
	for i := range c.nodes {
		c.stop(i)
		adm = newAdmin(t, c.seeds()[0])
		waitISR(t, adm, "rolling", partitions, 2)
		waitAcked(500)
		c.restart(i)
		waitISR(t, adm, "rolling", partitions, 3)
		waitAcked(500)
	}
	sp.stopAndFlush(t, ctx, prod)
	all, errs := sp.results()
	if len(errs) > 0 {
		t.Fatalf("the producer saw %d errors across the rolling restart, the first: %v", len(errs), errs[0])
	}
	eventually(t, 60*time.Second, func() error {
		for _, a := range all {
			if _, ok := consumed.Load(a.seq); !ok {
				return errNotYet
			}
		}
		return nil
	})
	consCancel()
	cwg.Wait()
	t.Logf("%d records acknowledged and consumed across a rolling restart of three brokers, no producer error", len(all))
}
