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
	var mu sync.Mutex
	var acked []uint64
	var produceErrs []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := make([]byte, 16)
			binary.BigEndian.PutUint64(v, i)
			prod.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					produceErrs = append(produceErrs, err)
					return
				}
				acked = append(acked, binary.BigEndian.Uint64(r.Value))
			})
			if i%20 == 19 {
				time.Sleep(time.Millisecond) // a steady stream, not a flood
			}
		}
	}()
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
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitAcked := func(n int) {
		t.Helper()
		from := ackedCount()
		eventually(t, 60*time.Second, func() error {
			if ackedCount() < from+n {
				return errNotYet
			}
			return nil
		})
	}
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
	close(stop)
	wg.Wait()
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	errs, all := produceErrs, append([]uint64(nil), acked...)
	mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("the producer saw %d errors across the rolling restart, the first: %v", len(errs), errs[0])
	}
	eventually(t, 60*time.Second, func() error {
		for _, v := range all {
			if _, ok := consumed.Load(v); !ok {
				return errNotYet
			}
		}
		return nil
	})
	consCancel()
	cwg.Wait()
	t.Logf("%d records acknowledged and consumed across a rolling restart of three brokers, no producer error", len(all))
}
