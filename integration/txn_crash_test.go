package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Transactions across kill -9 (issue 10): whatever was in flight when the
// broker died is resolved after the restart.

// txnBrokerFlags make timed-out transactions abort quickly.
var txnBrokerFlags = []string{
	"num.partitions=3",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
}

// readCommittedUntilEnd consumes topic read_committed from the start until
// every partition has delivered a record whose value is "end", and
// returns every other value with how often it was seen. Since a
// read_committed fetch stops at the last stable offset, reaching "end"
// means every transaction before it was resolved.
func readCommittedUntilEnd(t *testing.T, seed, topic string, partitions int, timeout time.Duration) map[string]int {
	t.Helper()
	cl := newClient(t, seed, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	ctx := ctxTimeout(t, timeout)
	seen := map[string]int{}
	ends := map[int32]bool{}
	for len(ends) < partitions {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read_committed did not reach the end of every partition (got %d of %d): %v", len(ends), partitions, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "end" {
				ends[r.Partition] = true
				return
			}
			seen[string(r.Value)]++
		})
	}
	return seen
}

// writeEnds appends "end" to every partition with a plain producer.
func writeEnds(t *testing.T, seed, topic string, partitions int) {
	t.Helper()
	cl := newClient(t, seed, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxTimeout(t, 60*time.Second)
	for p := range partitions {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(p), Value: []byte("end")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTransactionsInFlightResolvedAfterKill9: one producer has a
// transaction open and another commits transactions in a loop when the
// broker is killed with SIGKILL. After the restart the open transaction is
// aborted once it times out, whatever the other had in flight is completed
// or aborted as a whole, and a read_committed consumer sees every
// committed record exactly once and no aborted one.
func TestTransactionsInFlightResolvedAfterKill9(t *testing.T) {
	const partitions, perTxn = 3, 9
	dir, port := t.TempDir(), freePort(t)
	p := startProcess(t, dir, port, txnBrokerFlags...)
	ctx := ctxTimeout(t, 3*time.Minute)
	topic := "txn-kill"
	if _, err := newAdmin(t, p.Addr).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceTxn := func(cl *kgo.Client, name string, commit bool) error {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		for j := range perTxn {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", name, j))}).FirstErr(); err != nil {
				return err
			}
		}
		if !commit {
			return nil // left open
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	}
	opts := func(id string) []kgo.Opt {
		return []kgo.Opt{kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(3 * time.Second),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RetryTimeout(5 * time.Second), kgo.RecordDeliveryTimeout(20 * time.Second)}
	}
	open, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.Addr)}, opts("open")...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := produceTxn(open, "open-committed", true); err != nil {
		t.Fatal(err)
	}
	if err := produceTxn(open, "open-aborted", false); err != nil {
		t.Fatal(err)
	}

	// The looping producer: the broker dies under it.
	loop, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.Addr)}, opts("loop")...)...)
	if err != nil {
		t.Fatal(err)
	}
	var acked atomic.Int64 // transactions whose commit was acknowledged
	acked.Store(-1)
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		for i := 0; ctx.Err() == nil; i++ {
			if err := produceTxn(loop, fmt.Sprintf("loop%d", i), true); err != nil {
				return
			}
			acked.Store(int64(i))
		}
	}()
	for acked.Load() < 20 {
		select {
		case <-loopDone:
			t.Fatalf("the producer failed after %d transactions, before the kill", acked.Load()+1)
		case <-time.After(5 * time.Millisecond):
		}
	}
	p.kill(t)
	// Closing the client fails what it still holds.
	loop.Close()
	<-loopDone
	open.Close()
	lastAcked := acked.Load()

	p = startProcess(t, dir, port, txnBrokerFlags...)
	// The looping producer comes back: its InitProducerId fences and
	// aborts whatever it left open. The other one never comes back: its
	// transaction times out.
	again := newClient(t, p.Addr, opts("loop")...)
	if err := produceTxn(again, "after", true); err != nil {
		t.Fatal(err)
	}
	writeEnds(t, p.Addr, topic, partitions)
	seen := readCommittedUntilEnd(t, p.Addr, topic, partitions, 90*time.Second)

	txns := map[string]int{} // transaction -> records seen
	for v, n := range seen {
		if n != 1 {
			t.Errorf("%q seen %d times", v, n)
		}
		txns[v[:strings.LastIndex(v, "-")]]++
	}
	if txns["open-aborted"] != 0 {
		t.Errorf("read_committed saw %d records of the transaction open at the kill", txns["open-aborted"])
	}
	for name, n := range txns {
		if n != perTxn {
			t.Errorf("transaction %s: %d of %d records (not atomic)", name, n, perTxn)
		}
	}
	for _, name := range []string{"open-committed", "after"} {
		if txns[name] != perTxn {
			t.Errorf("committed transaction %s missing", name)
		}
	}
	for i := int64(0); i <= lastAcked; i++ {
		if txns[fmt.Sprintf("loop%d", i)] != perTxn {
			t.Errorf("acknowledged transaction loop%d missing", i)
		}
	}
	t.Logf("%d transactions acknowledged before the kill, %d committed in all", lastAcked+1, len(txns))
}

// TestExactlyOnceAcrossKills: a consume-transform-produce loop (kgo's
// GroupTransactSession) copies every record of an input topic to an output
// topic while the broker is killed with SIGKILL three times; afterwards
// the output, read_committed, holds every input record exactly once.
// MOLDAU_EOS_RECORDS sets the number of records (1,000,000 for the full
// run; the default keeps CI short).
func TestExactlyOnceAcrossKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a broker process three times")
	}
	const partitions = 3
	total := 30_000
	if s := os.Getenv("MOLDAU_EOS_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		total = n
	}
	dir, port := t.TempDir(), freePort(t)
	p := startProcess(t, dir, port, txnBrokerFlags...)
	setup := ctxTimeout(t, 5*time.Minute)
	adm := newAdmin(t, p.Addr)
	if _, err := adm.CreateTopics(setup, partitions, 1, nil, "eos-in", "eos-out"); err != nil {
		t.Fatal(err)
	}
	produceNumbered(t, setup, p.Addr, "eos-in", total)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	loopDone := make(chan error, 1)
	var sessions atomic.Int32
	go func() { loopDone <- transformLoop(ctx, p.Addr, "eos-in", "eos-out", total, &sessions) }()

	// Kill the broker three times as the copy progresses.
	for k := 1; k <= 3; k++ {
		target := int64(total * k / 4)
		for {
			n, err := committedInput(ctx, p.Addr, "eos", "eos-in")
			if err == nil && n >= target {
				break
			}
			select {
			case err := <-loopDone:
				t.Fatalf("the loop ended before kill %d: %v", k, err)
			case <-ctx.Done():
				t.Fatalf("no progress to %d before kill %d", target, k)
			case <-time.After(50 * time.Millisecond):
			}
		}
		p.kill(t)
		p = startProcess(t, dir, port, txnBrokerFlags...) // on the same port
		t.Logf("kill %d at %d of %d records committed", k, target, total)
	}
	if err := <-loopDone; err != nil {
		t.Fatal(err)
	}
	// kgo usually rides out a restart within its retry timeout, so one
	// session may see it all through.
	t.Logf("%d records copied by %d transactional session(s) across 3 kills", total, sessions.Load())
	writeEnds(t, p.Addr, "eos-out", partitions)
	seen := readCommittedUntilEnd(t, p.Addr, "eos-out", partitions, 10*time.Minute)
	if len(seen) != total {
		t.Errorf("output has %d distinct records, want %d", len(seen), total)
	}
	dups := 0
	for i := range total {
		switch n := seen[strconv.Itoa(i)]; n {
		case 1:
		case 0:
			t.Errorf("record %d missing", i)
		default:
			dups++
		}
	}
	if dups > 0 {
		t.Errorf("%d records duplicated", dups)
	}
}

// transformLoop is a consume-transform-produce application: a
// GroupTransactSession copies every record it reads, committing its
// offsets in the same transaction. When the session fails (the broker
// died under it) it is closed and a new one, with the same transactional
// id, takes over, as an application restarting would. It returns once the
// group's committed offsets reach the end of the input.
func transformLoop(ctx context.Context, seed, in, out string, total int, sessions *atomic.Int32) error {
	newSession := func() (*kgo.GroupTransactSession, error) {
		sessions.Add(1)
		return kgo.NewGroupTransactSession(kgo.SeedBrokers(strings.Split(seed, ",")...), kgo.TransactionalID("eos-copier"),
			kgo.ConsumerGroup("eos"), kgo.ConsumeTopics(in), kgo.DefaultProduceTopic(out),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
			kgo.TransactionTimeout(10*time.Second), kgo.SessionTimeout(10*time.Second),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.RetryTimeout(30*time.Second))
	}
	sess, err := newSession()
	if err != nil {
		return err
	}
	defer func() { sess.Close() }()
	for ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := sess.PollFetches(pctx)
		pcancel()
		if err := sess.Begin(); err != nil {
			sess.Close()
			if sess, err = newSession(); err != nil {
				return err
			}
			continue
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, nil)
		})
		if _, err := sess.End(ctx, kgo.TryCommit); err != nil {
			sess.Close()
			if sess, err = newSession(); err != nil {
				return err
			}
			continue
		}
		if fs.NumRecords() == 0 {
			n, err := committedInput(ctx, seed, "eos", in)
			if err == nil && n >= int64(total) {
				return nil
			}
		}
	}
	return ctx.Err()
}

// produceNumbered writes records "0" to total-1 to topic, round robin over
// its partitions, and waits until every one is acknowledged.
func produceNumbered(t *testing.T, ctx context.Context, seed, topic string, total int) {
	t.Helper()
	prod := newClient(t, seed, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	defer prod.Close()
	for i := range total {
		prod.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("producing the input: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// committedInput sums the group's committed offsets on topic.
func committedInput(ctx context.Context, seed, group, topic string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(seed, ",")...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(cctx, group)
	if err != nil {
		return 0, err
	}
	var n int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			n += o.At
		}
	})
	return n, nil
}
