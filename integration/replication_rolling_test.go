package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
	missing := func() []ackedRecord {
		var m []ackedRecord
		for _, a := range all {
			if _, ok := consumed.Load(a.seq); !ok {
				m = append(m, a)
			}
		}
		return m
	}
	var lastMissing []ackedRecord
	err := poll(60*time.Second, func() error {
		if lastMissing = missing(); len(lastMissing) > 0 {
			return errNotYet
		}
		return nil
	})
	consCancel()
	cwg.Wait()
	if err != nil {
		// Tell a consumer that stopped making progress from records that
		// are not in the log: read the missing offsets directly.
		m := lastMissing
		t.Logf("the group has not read %d of %d acknowledged records; the first at %s-%d offset %d", len(m), len(all), "rolling", m[0].partition, m[0].offset)
		logGroupOffsets(t, newAdmin(t, c.seeds()[0]), "rolling-group")
		consumeAll(t, ctx, c.seeds(), "rolling", partitions, len(all))
		t.Fatalf("every acknowledged record is in the log, but the group did not read %d of them", len(m))
	}
	t.Logf("%d records acknowledged and consumed across a rolling restart of three brokers, no producer error", len(all))
}

// logGroupOffsets logs a group's committed offsets and the partitions'
// ends, for a test that explains why the group is behind.
func logGroupOffsets(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	ctx := ctxTimeout(t, 10*time.Second)
	lag, err := adm.Lag(ctx, group)
	if err != nil {
		t.Logf("lag of %s: %v", group, err)
		return
	}
	for _, l := range lag.Sorted() {
		for _, ml := range l.Lag.Sorted() {
			member := "none"
			if ml.Member != nil {
				member = ml.Member.MemberID
			}
			t.Logf("%s %s-%d: committed %d, end %d, member %s, err %v", group, ml.Topic, ml.Partition, ml.Commit.At, ml.End.Offset, member, ml.Err)
		}
	}
}
