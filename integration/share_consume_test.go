package integration

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Share groups end to end (KIP-932): franz-go's share consumer reading
// through ShareFetch and ShareAcknowledge from real brokers.

// produceSeq produces n records with values seq from..from+n-1, at most
// ten to a batch (a share fetch hands out whole batches), and waits for
// every acknowledgement.
func produceSeq(t *testing.T, seed, topic string, from, n int) {
	t.Helper()
	cl := newClient(t, seed, kgo.DefaultProduceTopic(topic))
	ctx := ctxTimeout(t, time.Minute)
	for i := 0; i < n; i += 10 {
		rs := make([]*kgo.Record, min(10, n-i))
		for j := range rs {
			rs[j] = &kgo.Record{Value: binary.BigEndian.AppendUint64(nil, uint64(from+i+j))}
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// shareGroupConfigs sets a share group's configs.
func shareGroupConfigs(t *testing.T, seed, group string, kv ...string) {
	t.Helper()
	if code, msg := setGroupConfigs(t, newClient(t, seed), group, kv...); code != 0 {
		t.Fatalf("setting %v on group %s: %v %s", kv, group, kerr.ErrorForCode(code), msg)
	}
}

// shareTally counts the deliveries of each sequence number.
type shareTally struct {
	mu    sync.Mutex
	seen  map[uint64][]int32 // delivery counts, in the order seen
	total int
}

func (s *shareTally) add(r *kgo.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := binary.BigEndian.Uint64(r.Value)
	s.seen[v] = append(s.seen[v], r.DeliveryCount())
	s.total++
}

func (s *shareTally) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// shareConsumer polls a share group until ctx ends, acknowledging each
// record with ack and tallying it.
func shareConsumer(ctx context.Context, t *testing.T, seed, group, topic string, tally *shareTally, ack kgo.AckStatus, wg *sync.WaitGroup) *kgo.Client {
	cl := newClient(t, seed, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				tally.add(r)
				r.Ack(ack)
			})
		}
	}()
	return cl
}

// Three share consumers of one group read a two-partition topic together:
// every record is delivered once, to one of them, and accepted; records
// produced afterwards are delivered, none of the accepted ones again.
func TestShareConsumersReadEveryRecordOnce(t *testing.T) {
	const n = 3000
	b := startBroker(t, "", shareGroupBroker...)
	enableShareGroups(t, b.Seed())
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 2, "queue")
	shareGroupConfigs(t, b.Seed(), "workers", "share.auto.offset.reset", "earliest")
	produceSeq(t, b.Seed(), "queue", 0, n)

	tally := &shareTally{seen: map[uint64][]int32{}}
	ctx, cancel := context.WithCancel(ctxTimeout(t, 2*time.Minute))
	var wg sync.WaitGroup
	var consumers []*kgo.Client
	for range 3 {
		consumers = append(consumers, shareConsumer(ctx, t, b.Seed(), "workers", "queue", tally, kgo.AckAccept, &wg))
	}
	eventually(t, time.Minute, func() error {
		if d := tally.distinct(); d < n {
			return fmt.Errorf("%d of %d records delivered", d, n)
		}
		return nil
	})
	produceSeq(t, b.Seed(), "queue", n, 100)
	eventually(t, time.Minute, func() error {
		if d := tally.distinct(); d < n+100 {
			return fmt.Errorf("%d of %d records delivered", d, n+100)
		}
		return nil
	})
	cancel()
	wg.Wait()
	// The last records' acknowledgements may still be queued in the
	// clients: closing a share consumer sends them with its final
	// ShareFetch.
	for _, cl := range consumers {
		cl.Close()
	}
	tally.mu.Lock()
	defer tally.mu.Unlock()
	for v, dcs := range tally.seen {
		if len(dcs) != 1 || dcs[0] != 1 {
			t.Fatalf("record %d delivered with counts %v, want once", v, dcs)
		}
	}
	t.Logf("%d records delivered once each across three share consumers", tally.total)
	// Kafka's share-group metrics count them.
	var m map[string]float64
	eventually(t, 10*time.Second, func() error {
		m = scrape(t, b.MetricsAddr().String())
		if v, _ := metric(m, `kafka_server_share_group_metrics_record_acknowledgement_total{ack_type="Accept"}`); v < n+100 {
			return fmt.Errorf("record_acknowledgement Accept %v, want at least %d", v, n+100)
		}
		return nil
	})
	if v, _ := metric(m, "kafka_server_brokertopicmetrics_totalsharefetchrequests_total"); v == 0 {
		t.Error("no share fetch counted")
	}
	if _, ok := metric(m, "kafka_server_sharepartitionmetrics_inflightmessagecount"); !ok {
		t.Error("no in-flight gauge")
	}
}

// A record released again and again is delivered
// group.share.delivery.count.limit times, its delivery count going up,
// then archived: a record produced afterwards is delivered and the
// released ones are not.
func TestShareReleasedRecordsAreArchivedAtTheDeliveryLimit(t *testing.T) {
	const n = 50
	b := startBroker(t, "", append(shareGroupBroker, "group.share.delivery.count.limit=3")...)
	enableShareGroups(t, b.Seed())
	adm := newAdmin(t, b.Seed())
	createTopic(t, adm, 1, "poison")
	shareGroupConfigs(t, b.Seed(), "releasers", "share.auto.offset.reset", "earliest")
	produceSeq(t, b.Seed(), "poison", 0, n)

	tally := &shareTally{seen: map[uint64][]int32{}}
	ctx, cancel := context.WithCancel(ctxTimeout(t, 2*time.Minute))
	var wg sync.WaitGroup
	shareConsumer(ctx, t, b.Seed(), "releasers", "poison", tally, kgo.AckRelease, &wg)
	eventually(t, time.Minute, func() error {
		tally.mu.Lock()
		defer tally.mu.Unlock()
		for v := range uint64(n) {
			if len(tally.seen[v]) < 3 {
				return fmt.Errorf("record %d delivered %d times", v, len(tally.seen[v]))
			}
		}
		return nil
	})
	produceSeq(t, b.Seed(), "poison", n, 1)
	eventually(t, time.Minute, func() error {
		if d := tally.distinct(); d < n+1 {
			return fmt.Errorf("the record produced after is not delivered yet")
		}
		return nil
	})
	cancel()
	wg.Wait()
	tally.mu.Lock()
	defer tally.mu.Unlock()
	for v := range uint64(n) {
		if got := tally.seen[v]; len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
			t.Fatalf("record %d delivered with counts %v, want [1 2 3]", v, got)
		}
	}
}

// What a share consumer accepted stays accepted across a clean restart
// and a kill -9 of the broker; what it held without accepting is
// delivered again afterwards, to another consumer.
func TestShareAcceptedRecordsSurviveRestarts(t *testing.T) {
	dir, port := t.TempDir(), freePort(t)
	p := startProcess(t, dir, port, shareGroupBroker...)
	enableShareGroups(t, p.Addr)
	createTopic(t, newAdmin(t, p.Addr), 2, "durable-queue")
	shareGroupConfigs(t, p.Addr, "durable-workers", "share.auto.offset.reset", "earliest")
	const n = 2000
	produceSeq(t, p.Addr, "durable-queue", 0, n)
	accepted := map[uint64]bool{}
	for round, restart := range []string{"clean restart", "kill -9"} {
		// One consumer accepts some records and flushes its acks.
		cl := newClient(t, p.Addr, kgo.ShareGroup("durable-workers"), kgo.ConsumeTopics("durable-queue"))
		ctx := ctxTimeout(t, time.Minute)
		for got := 0; got < 300*(round+1); {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: polled %d records: %v", restart, got, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				v := binary.BigEndian.Uint64(r.Value)
				if accepted[v] {
					t.Errorf("%s: accepted record %d delivered again", restart, v)
				}
				r.Ack(kgo.AckAccept)
				accepted[v] = true
				got++
			})
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		if restart == "kill -9" {
			p.kill(t)
		} else {
			p.stop(t)
		}
		cl.Close()
		p = startProcess(t, dir, port, shareGroupBroker...)
	}
	// After both restarts, another consumer gets every record not
	// accepted, and none that was.
	tally := &shareTally{seen: map[uint64][]int32{}}
	ctx, cancel := context.WithCancel(ctxTimeout(t, 2*time.Minute))
	var wg sync.WaitGroup
	shareConsumer(ctx, t, p.Addr, "durable-workers", "durable-queue", tally, kgo.AckAccept, &wg)
	eventually(t, time.Minute, func() error {
		if d := tally.distinct(); d < n-len(accepted) {
			return fmt.Errorf("%d of %d unaccepted records delivered", d, n-len(accepted))
		}
		return nil
	})
	cancel()
	wg.Wait()
	tally.mu.Lock()
	defer tally.mu.Unlock()
	for v := range tally.seen {
		if accepted[v] {
			t.Fatalf("record %d, accepted before the restarts, delivered again", v)
		}
	}
	if len(tally.seen)+len(accepted) != n {
		t.Fatalf("%d accepted before, %d after, of %d", len(accepted), len(tally.seen), n)
	}
}

// A share group reading read_committed (share.isolation.level) gets the
// records of committed transactions and never those of aborted ones; a
// read_uncommitted group gets both.
func TestShareReadCommittedSkipsAbortedTransactions(t *testing.T) {
	b := startBroker(t, "", shareGroupBroker...)
	enableShareGroups(t, b.Seed())
	createTopic(t, newAdmin(t, b.Seed()), 1, "txn-queue")
	shareGroupConfigs(t, b.Seed(), "committed", "share.auto.offset.reset", "earliest", "share.isolation.level", "read_committed")
	shareGroupConfigs(t, b.Seed(), "uncommitted", "share.auto.offset.reset", "earliest")
	prod := newClient(t, b.Seed(), kgo.DefaultProduceTopic("txn-queue"), kgo.TransactionalID("share-txn"))
	ctx := ctxTimeout(t, time.Minute)
	next := uint64(0)
	committed := map[uint64]bool{}
	for round := range 6 {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			v := next
			next++
			if round%2 == 0 {
				committed[v] = true
			}
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: binary.BigEndian.AppendUint64(nil, v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(round%2 == 0)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		group string
		want  int
	}{{"committed", len(committed)}, {"uncommitted", int(next)}} {
		tally := &shareTally{seen: map[uint64][]int32{}}
		cctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		shareConsumer(cctx, t, b.Seed(), c.group, "txn-queue", tally, kgo.AckAccept, &wg)
		eventually(t, 30*time.Second, func() error {
			if d := tally.distinct(); d < c.want {
				return fmt.Errorf("group %s: %d of %d records", c.group, d, c.want)
			}
			return nil
		})
		cancel()
		wg.Wait()
		tally.mu.Lock()
		for v := range tally.seen {
			if c.group == "committed" && !committed[v] {
				t.Errorf("read_committed share group got record %d of an aborted transaction", v)
			}
		}
		if len(tally.seen) != c.want {
			t.Errorf("group %s got %d records, want %d", c.group, len(tally.seen), c.want)
		}
		tally.mu.Unlock()
	}
}

// shareCLIConsumer is a `moldau consume --share-group` process whose
// printed values (one sequence number a line) are collected.
type shareCLIConsumer struct {
	cmd  *exec.Cmd
	done chan error
	mu   sync.Mutex
	seen []uint64
}

func startShareCLIConsumer(t *testing.T, seed, group, topic string) *shareCLIConsumer {
	t.Helper()
	c := &shareCLIConsumer{cmd: exec.Command(moldauBinary(t), "consume", topic, "--share-group", group, "-f", "%v\n"), done: make(chan error, 1)}
	c.cmd.Env = append(c.cmd.Environ(), "MOLDAU_BROKERS="+seed)
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	c.cmd.Stderr = &stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			v, err := strconv.ParseUint(sc.Text(), 10, 64)
			if err != nil {
				continue
			}
			c.mu.Lock()
			c.seen = append(c.seen, v)
			c.mu.Unlock()
		}
		c.done <- c.cmd.Wait()
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			t.Logf("consumer %d stderr:\n%s", c.cmd.Process.Pid, stderr.String())
		}
		c.done <- nil
	})
	return c
}

func (c *shareCLIConsumer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// Three share consumers in separate processes (moldau consume
// --share-group) read 100,000 records of a two-partition topic; the
// busiest is killed with kill -9 once a tenth of them are printed. The
// records it held are delivered to the others once their locks expire:
// every record is printed, and the two that stayed never print a record
// twice between them (what they accepted stays accepted).
func TestShareConsumerProcessKilled(t *testing.T) {
	const n = 100_000
	b := startBroker(t, "", append(shareGroupBroker, "group.share.min.record.lock.duration.ms=1000")...)
	enableShareGroups(t, b.Seed())
	createTopic(t, newAdmin(t, b.Seed()), 2, "jobs")
	shareGroupConfigs(t, b.Seed(), "job-workers", "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "2000")
	prod := newClient(t, b.Seed(), kgo.DefaultProduceTopic("jobs"), kgo.ProducerBatchMaxBytes(16<<10))
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Value: []byte(strconv.Itoa(i))}
	}
	if err := prod.ProduceSync(ctxTimeout(t, 2*time.Minute), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var cs []*shareCLIConsumer
	for range 3 {
		cs = append(cs, startShareCLIConsumer(t, b.Seed(), "job-workers", "jobs"))
	}
	// The consumer that has printed the most once a tenth of the records
	// are out is killed: how the three share the partitions depends on
	// the machine's speed, and the busiest one surely holds records.
	counts := func() []int {
		var ns []int
		for _, c := range cs {
			ns = append(ns, c.count())
		}
		return ns
	}
	eventually(t, 2*time.Minute, func() error {
		if ns := counts(); ns[0]+ns[1]+ns[2] < n/10 {
			return fmt.Errorf("the consumers printed %v records", ns)
		}
		return nil
	})
	victim := 0
	for i, c := range cs {
		if c.count() > cs[victim].count() {
			victim = i
		}
	}
	cs[0], cs[victim] = cs[victim], cs[0]
	cs[0].cmd.Process.Signal(syscall.SIGKILL)
	<-cs[0].done
	cs[0].done <- nil
	union := func() map[uint64]int {
		m := map[uint64]int{}
		for _, c := range cs {
			c.mu.Lock()
			for _, v := range c.seen {
				m[v]++
			}
			c.mu.Unlock()
		}
		return m
	}
	eventually(t, 4*time.Minute, func() error {
		if got := len(union()); got < n {
			return fmt.Errorf("%d of %d records printed (the survivors printed %d and %d)", got, n, cs[1].count(), cs[2].count())
		}
		return nil
	})
	survivors := map[uint64]int{}
	for _, c := range cs[1:] {
		c.mu.Lock()
		for _, v := range c.seen {
			survivors[v]++
			if survivors[v] > 1 {
				t.Errorf("record %d printed twice by the consumers that stayed", v)
			}
		}
		c.mu.Unlock()
	}
	redelivered := 0
	for v, k := range union() {
		if k > 1 {
			redelivered++
		}
		if v >= n {
			t.Errorf("record %d was never produced", v)
		}
	}
	t.Logf("%d records: the killed consumer printed %d, the others %d; %d printed again after the kill", n, cs[0].count(), cs[1].count()+cs[2].count(), redelivered)
}

// The broker killed with kill -9 and restarted while three share
// consumers read: no record whose acceptance the broker had confirmed is
// delivered again, and every record is delivered (what was delivered and
// not confirmed, again).
func TestShareBrokerKilledMidRun(t *testing.T) {
	const n = 20_000
	dir, port := t.TempDir(), freePort(t)
	p := startProcess(t, dir, port, shareGroupBroker...)
	enableShareGroups(t, p.Addr)
	createTopic(t, newAdmin(t, p.Addr), 2, "midrun")
	shareGroupConfigs(t, p.Addr, "midrun-workers", "share.auto.offset.reset", "earliest")
	produceSeq(t, p.Addr, "midrun", 0, n)

	var mu sync.Mutex
	// confirmed: accepted, and a broker said so. beforeKill: confirmed by
	// the process then killed, so durable before the kill -9: such a
	// record may never come back. One confirmed by the restarted process
	// may: kgo can ack records of a delivery made before the kill on the
	// new share session, which the new broker accepts for the member's
	// new acquisition of the same offsets (made before that ack, since
	// the old acquisition was never acked), and then hand over that
	// acquisition's buffered records.
	confirmed := map[uint64]bool{}
	beforeKill := map[uint64]bool{}
	delivered := map[uint64]bool{}
	killed := false
	redelivered := 0 // confirmed by the restarted process, delivered again
	var violations []uint64
	var details []string
	ctx, cancel := context.WithCancel(ctxTimeout(t, 3*time.Minute))
	var wg sync.WaitGroup
	for range 3 {
		var ackErr error
		var amu sync.Mutex
		cl := newClient(t, p.Addr, kgo.ShareGroup("midrun-workers"), kgo.ConsumeTopics("midrun"),
			kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
				amu.Lock()
				if err := rs.Error(); err != nil {
					ackErr = err
				}
				amu.Unlock()
			}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var got []uint64
				fs := cl.PollFetches(ctx)
				// Reset before this round's records are acked: kgo may send
				// their acks with a background ShareFetch before FlushAcks,
				// and that callback's error must not be wiped out. (An
				// earlier round's late error then only makes this round
				// unconfirmed, which is safe.)
				amu.Lock()
				ackErr = nil
				amu.Unlock()
				fs.EachRecord(func(r *kgo.Record) {
					v := binary.BigEndian.Uint64(r.Value)
					mu.Lock()
					if confirmed[v] && !beforeKill[v] {
						redelivered++
					}
					if beforeKill[v] {
						violations = append(violations, v)
						if len(details) < 5 {
							details = append(details, fmt.Sprintf("%d (partition %d offset %d, delivery count %d)", v, r.Partition, r.Offset, r.DeliveryCount()))
						}
					}
					delivered[v] = true
					mu.Unlock()
					r.Ack(kgo.AckAccept)
					got = append(got, v)
				})
				if len(got) == 0 {
					continue
				}
				fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
				err := cl.FlushAcks(fctx)
				fcancel()
				amu.Lock()
				ok := err == nil && ackErr == nil
				amu.Unlock()
				if ok {
					mu.Lock()
					for _, v := range got {
						confirmed[v] = true
						if !killed {
							beforeKill[v] = true
						}
					}
					mu.Unlock()
				}
			}
		}()
	}
	count := func(m map[uint64]bool) int {
		mu.Lock()
		defer mu.Unlock()
		return len(m)
	}
	eventually(t, time.Minute, func() error {
		if c := count(confirmed); c < n/4 {
			return fmt.Errorf("%d records confirmed", c)
		}
		return nil
	})
	mu.Lock()
	killed = true
	mu.Unlock()
	p.kill(t)
	before := count(beforeKill)
	p = startProcess(t, dir, port, shareGroupBroker...)
	eventually(t, 2*time.Minute, func() error {
		if d := count(delivered); d < n {
			return fmt.Errorf("%d of %d records delivered", d, n)
		}
		return nil
	})
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("%d records delivered again after the killed broker confirmed their acceptance, the first %d; %s", len(violations), violations[0], strings.Join(details, ", "))
	}
	t.Logf("%d records confirmed before the kill -9, %d after (%d of those delivered again, acked on the new session for a delivery made before the kill); all %d delivered",
		before, len(confirmed)-before, redelivered, n)
}
