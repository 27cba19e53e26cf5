package integration

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker"
)

// The transactional stall on three nodes (issue: "Transactional producers
// stall for seconds after a commit on three nodes"): four transactional
// producers each write one record to every partition of a 6-partition
// topic spread over three brokers, then commit (80 %) or abort (20 %), as
// fast as they can. A produce that follows an EndTxn meets the previous
// transaction still writing its markers; the coordinator holds the add
// back until they are written, and if they take longer than
// add.partitions.to.txn.retry.backoff.max.ms the producer gets a
// retriable error and waits for a metadata refresh.

var txnStallDuration = flag.Duration("txnstall.duration", 10*time.Second, "how long BenchmarkTransactionsThreeNodes runs its producers")

// BenchmarkTransactionsThreeNodes runs the load on three
// in-process combined-mode nodes and reports transactions per second per
// producer, the Produce errors the brokers answered and the markers'
// latency (EndTxn to the last marker written, from
// kafka_server_transaction_coordinator_metrics_marker_latency_ms):
//
//	go test -run '^$' -bench TransactionsThreeNodes -benchtime 1x ./integration/ -txnstall.duration 60s
func BenchmarkTransactionsThreeNodes(b *testing.B) {
	bs, seed := startTxnCluster(b)
	for range b.N {
		r := runTxnLoad(b, bs, seed, txnLoad{producers: 4, duration: *txnStallDuration})
		fmt.Println(r) // b.Log's output is truncated after the brokers' logs
		slowest, fastest := r.rates()
		b.ReportMetric(slowest, "slowest-txn/s")
		b.ReportMetric(fastest, "fastest-txn/s")
		b.ReportMetric(float64(r.produceErrors["NOT_ENOUGH_REPLICAS"]), "NOT_ENOUGH_REPLICAS")
		b.ReportMetric(float64(r.produceErrors["CONCURRENT_TRANSACTIONS"]), "CONCURRENT_TRANSACTIONS")
		b.ReportMetric(r.markerP50, "marker-p50-ms")
		b.ReportMetric(r.markerP99, "marker-p99-ms")
	}
}

// TestTransactionsThreeNodesNoStall: with four producers ending
// transactions back to back on three nodes, every produce that follows an
// EndTxn is accepted once the previous markers are written: no producer
// retries a produce after NOT_ENOUGH_REPLICAS or CONCURRENT_TRANSACTIONS. The wait for
// the markers is set long (10 s) so that the outcome does not depend on
// how fast a loaded machine is: only markers that cannot be written until
// some wait expires (one broker's marker request queued behind another
// broker's held-back add, and the reverse) make a producer see an error.
func TestTransactionsThreeNodesNoStall(t *testing.T) {
	bs, seed := startTxnCluster(t, "add.partitions.to.txn.retry.backoff.max.ms=10000")
	r := runTxnLoad(t, bs, seed, txnLoad{producers: 4, transactions: 40})
	t.Log(r)
	for _, name := range []string{"NOT_ENOUGH_REPLICAS", "CONCURRENT_TRANSACTIONS"} {
		if n := r.produceErrors[name]; n > 0 {
			t.Errorf("producers retried %.0f produce partitions after %s", n, name)
		}
	}
}

// startTxnCluster starts three combined-mode nodes and a 6-partition topic
// "txnstall" with a leader on each.
func startTxnCluster(tb testing.TB, overrides ...string) ([]*broker.Broker, string) {
	nodes := newClusterNodes(tb, 3)
	bs := make([]*broker.Broker, 3)
	for i, n := range nodes {
		bs[i] = startInProcessNode(tb, n, nodes, overrides...)
	}
	tb.Cleanup(func() {
		for _, b := range bs {
			b.Close()
		}
	})
	waitReady(tb, bs...)
	seed := nodes[0].seed()
	ctx := ctxTimeout(tb, 30*time.Second)
	adm := newAdmin(tb, seed)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "txnstall"); err != nil {
		tb.Fatal(err)
	}
	eventually(tb, 10*time.Second, func() error {
		md, err := adm.Metadata(ctx, "txnstall")
		if err != nil {
			return err
		}
		leaders := map[int32]bool{}
		for _, p := range md.Topics["txnstall"].Partitions {
			if p.Leader >= 0 {
				leaders[p.Leader] = true
			}
		}
		if len(leaders) != 3 {
			return fmt.Errorf("leaders %v", leaders)
		}
		return nil
	})
	return bs, seed
}

// txnLoad is the load: producers, each ending transactions until
// duration has passed, or until it ended transactions of them.
type txnLoad struct {
	producers    int
	duration     time.Duration
	transactions int
}

type txnLoadResult struct {
	elapsed       time.Duration
	committed     []int // by producer
	aborted       []int
	produceErrors map[string]float64 // Produce error codes the brokers answered, by name
	markerP50     float64            // ms, the worst broker's
	markerP99     float64
	markerCount   float64
	flush, end    time.Duration // spent in all producers' Flush and EndTransaction
}

func (r txnLoadResult) rates() (slowest, fastest float64) {
	slowest = -1
	for i := range r.committed {
		rate := float64(r.committed[i]+r.aborted[i]) / r.elapsed.Seconds()
		if slowest < 0 || rate < slowest {
			slowest = rate
		}
		fastest = max(fastest, rate)
	}
	return slowest, fastest
}

func (r txnLoadResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d producers for %v:", len(r.committed), r.elapsed.Round(time.Millisecond))
	for i := range r.committed {
		n := r.committed[i] + r.aborted[i]
		fmt.Fprintf(&b, " [%d txns (%d committed), %.0f/s]", n, r.committed[i], float64(n)/r.elapsed.Seconds())
	}
	var names []string
	for n := range r.produceErrors {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "; produce errors:")
	for _, n := range names {
		fmt.Fprintf(&b, " %s=%.0f", n, r.produceErrors[n])
	}
	fmt.Fprintf(&b, "; marker latency (EndTxn to the last marker, worst broker) p50 %.2f ms p99 %.2f ms over %.0f transactions",
		r.markerP50, r.markerP99, r.markerCount)
	fmt.Fprintf(&b, "; time in Flush %v, in EndTransaction %v", r.flush.Round(time.Millisecond), r.end.Round(time.Millisecond))
	return b.String()
}

// txnsPerTransactionalID: a producer moves to a new transactional id after
// this many transactions. Under transaction version 2 every EndTxn bumps
// the producer epoch, and at about 550 transactions a second a producer
// exhausts its epochs (32767) within a minute. The move to the next
// producer id once failed the producer with INVALID_PRODUCER_ID_MAPPING;
// that is fixed (TestTransactionalProducerAcrossEpochExhaustion), and the
// benchmark still steps around the exhaustion to measure the steady state.
const txnsPerTransactionalID = 30000

func runTxnLoad(tb testing.TB, bs []*broker.Broker, seed string, l txnLoad) txnLoadResult {
	const partitions = 6
	ctx := ctxTimeout(tb, l.duration+5*time.Minute)
	r := txnLoadResult{committed: make([]int, l.producers), aborted: make([]int, l.producers)}
	counter := &retryCounter{retries: map[string]int{}}
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(l.duration)
	for i := range l.producers {
		var cl *kgo.Client
		connect := func(n int) {
			if cl != nil {
				cl.Close()
			}
			var err error
			cl, err = kgo.NewClient(kgo.SeedBrokers(seed), kgo.TransactionalID(fmt.Sprintf("txnstall-%d-%d-%d", i, start.UnixNano(), n)),
				kgo.DefaultProduceTopic("txnstall"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerLinger(0), kgo.TransactionTimeout(time.Minute), kgo.WithLogger(counter))
			if err != nil {
				tb.Fatal(err)
			}
		}
		connect(0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { cl.Close() }()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for n := 0; ; n++ {
				if (l.transactions > 0 && n >= l.transactions) || (l.duration > 0 && time.Now().After(deadline)) {
					return
				}
				if n > 0 && n%txnsPerTransactionalID == 0 {
					connect(n) // see txnsPerTransactionalID
				}
				if err := cl.BeginTransaction(); err != nil {
					tb.Error(err)
					return
				}
				for p := range partitions {
					cl.Produce(ctx, &kgo.Record{Partition: int32(p), Value: fmt.Appendf(nil, "%d-%d-%d", i, n, p)}, func(_ *kgo.Record, err error) {
						if err != nil {
							tb.Error(err)
						}
					})
				}
				t0 := time.Now()
				if err := cl.Flush(ctx); err != nil {
					tb.Error(err)
					return
				}
				t1 := time.Now()
				commit := rng.IntN(5) != 0
				if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
					tb.Errorf("EndTransaction(%v): %v", commit, err)
					return
				}
				counter.times(t1.Sub(t0), time.Since(t1))
				if commit {
					r.committed[i]++
				} else {
					r.aborted[i]++
				}
			}
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	r.produceErrors = map[string]float64{}
	counter.mu.Lock()
	for n, v := range counter.retries {
		r.produceErrors[n] = float64(v)
	}
	r.flush, r.end = counter.flush, counter.end
	counter.mu.Unlock()
	r.markerP50, r.markerP99, r.markerCount = markerLatency(tb, bs)
	return r
}

// retryCounter is the producers' kgo.Logger: it counts the produce
// partitions kgo retries, by error, from its debug log of each response
// ("retrying@offset,records(ERROR: ...)").
type retryCounter struct {
	mu         sync.Mutex
	retries    map[string]int
	flush, end time.Duration
}

var retryingRe = regexp.MustCompile(`retrying@-?[0-9]+,[0-9]+\(([A-Z_]+)`)

func (c *retryCounter) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (c *retryCounter) Log(_ kgo.LogLevel, msg string, kvs ...any) {
	if msg != "produced" {
		return
	}
	for i := 1; i < len(kvs); i += 2 {
		s, ok := kvs[i].(string)
		if !ok {
			continue
		}
		for _, m := range retryingRe.FindAllStringSubmatch(s, -1) {
			c.mu.Lock()
			c.retries[m[1]]++
			c.mu.Unlock()
		}
	}
}

func (c *retryCounter) times(flush, end time.Duration) {
	c.mu.Lock()
	c.flush += flush
	c.end += end
	c.mu.Unlock()
}

// produceErrors sums the brokers' kafka_network_requestmetrics_errors_total
// by error name: Produce's as the name, other requests' as request:name.
func produceErrors(tb testing.TB, bs []*broker.Broker) map[string]float64 {
	out := map[string]float64{}
	for _, b := range bs {
		for _, m := range gatherMetric(tb, b, "kafka_network_requestmetrics_errors_total") {
			name := label(m, "error")
			if req := label(m, "request"); req != "Produce" {
				name = req + ":" + name
			}
			out[name] += m.GetCounter().GetValue()
		}
	}
	return out
}

// markerLatency is the worst broker's p50 and p99 of
// kafka_server_transaction_coordinator_metrics_marker_latency_ms, and the
// transactions observed on all.
func markerLatency(tb testing.TB, bs []*broker.Broker) (p50, p99, count float64) {
	for _, b := range bs {
		for _, m := range gatherMetric(tb, b, "kafka_server_transaction_coordinator_metrics_marker_latency_ms") {
			s := m.GetSummary()
			count += float64(s.GetSampleCount())
			for _, q := range s.GetQuantile() {
				if math.IsNaN(q.GetValue()) {
					continue // no transaction ended on this broker
				}
				switch q.GetQuantile() {
				case 0.5:
					p50 = max(p50, q.GetValue())
				case 0.99:
					p99 = max(p99, q.GetValue())
				}
			}
		}
	}
	return p50, p99, count
}

func gatherMetric(tb testing.TB, b *broker.Broker, name string) []*dto.Metric {
	mfs, err := b.Registry().Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestTransactionVersion2ProduceGetsConcurrentTransactions: when the
// previous transaction's markers cannot be written within
// add.partitions.to.txn.retry.backoff.max.ms (here the leader of one of its
// partitions is gone), the next transaction's Produce v12 is answered
// CONCURRENT_TRANSACTIONS, as Kafka 4 answers clients of transaction
// version 2, not the NOT_ENOUGH_REPLICAS older clients get.
func TestTransactionVersion2ProduceGetsConcurrentTransactions(t *testing.T) {
	bs, seed := startTxnCluster(t)
	ctx := ctxTimeout(t, time.Minute)
	adm := newAdmin(t, seed)
	md, err := adm.Metadata(ctx, "txnstall")
	if err != nil {
		t.Fatal(err)
	}
	partitionOn := map[int32]int32{} // leader -> a partition it leads
	for _, p := range md.Topics["txnstall"].Partitions {
		partitionOn[p.Leader] = p.Partition
	}
	// A transactional id, its coordinator z, a leader x that is not z
	// (to be closed), and a leader y that is neither.
	var id string
	var z int32
	for i := 0; id == "" && i < 100; i++ {
		cand := fmt.Sprintf("expiry-%d", i)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 1, []string{cand}
		resp, err := req.RequestWith(ctx, newClient(t, seed))
		if err != nil || resp.Coordinators[0].ErrorCode != 0 {
			continue
		}
		id, z = cand, resp.Coordinators[0].NodeID
	}
	if id == "" {
		t.Fatal("no transaction coordinator found")
	}
	x, y := z%3+1, (z+1)%3+1
	addr := func(node int32) string { return bs[node-1].Addr("").String() }
	coord := newRawConn(t, addr(z))

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis, init.ProducerID, init.ProducerEpoch = &id, 60000, -1, -1
	// z may not have applied the topic FindCoordinator just created, or
	// still be loading its shard: retried as a client retries.
	var ir *kmsg.InitProducerIDResponse
	eventually(t, 15*time.Second, func() error {
		ir = coord.do(init, 5).(*kmsg.InitProducerIDResponse)
		return kerr.ErrorForCode(ir.ErrorCode)
	})
	produce := func(node int32, epoch int16, value string) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, &id
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "txnstall"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = partitionOn[node]
		rp.Records = txnRecordBatch(t, ir.ProducerID, epoch, 0, true, value)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := newRawConn(t, addr(node)).do(req, 12).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(x, ir.ProducerEpoch, "first"); code != 0 {
		t.Fatalf("first transaction's produce: %v", kerr.ErrorForCode(code))
	}
	// The first transaction's marker for x cannot be written now.
	bs[x-1].Close()
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
	er := coord.do(end, 5).(*kmsg.EndTxnResponse)
	if er.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(er.ErrorCode))
	}
	if code := produce(y, er.ProducerEpoch, "second"); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("second transaction's produce while the first one's markers are pending: %v, want CONCURRENT_TRANSACTIONS", kerr.ErrorForCode(code))
	}
}
