package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker/brokertest"
)

// exactQuantile is the sample of rank ceil(q*n) in sorted order, the
// definition histogram.Quantile approximates.
func exactQuantile(sorted []int64, q float64) int64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, f func(i int) int64) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = f(i)
		}
		return s
	}
	tests := []struct {
		name    string
		samples []int64
	}{
		{"single", []int64{1234567}},
		{"zero", []int64{0, 0, 0}},
		{"small exact", gen(127, func(i int) int64 { return int64(i) })},
		{"uniform 1..10000", gen(10000, func(i int) int64 { return int64(i + 1) })},
		{"uniform random µs..s", gen(50000, func(int) int64 { return 1000 + rng.Int64N(int64(time.Second)) })},
		{"exponential ms", gen(50000, func(int) int64 { return int64(rng.ExpFloat64() * float64(time.Millisecond)) })},
		{"bimodal", gen(10000, func(i int) int64 {
			if i%100 == 0 {
				return 250 * int64(time.Millisecond)
			}
			return 800*int64(time.Microsecond) + rng.Int64N(100000)
		})},
		{"huge", []int64{1, math.MaxInt64 / 2, math.MaxInt64}},
		{"negative clamps to 0", []int64{-5, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h histogram
			for _, v := range tt.samples {
				h.Record(v)
			}
			sorted := slices.Clone(tt.samples)
			for i, v := range sorted {
				sorted[i] = max(v, 0)
			}
			slices.Sort(sorted)
			if h.Count() != uint64(len(sorted)) {
				t.Fatalf("Count = %d, want %d", h.Count(), len(sorted))
			}
			if h.Max() != sorted[len(sorted)-1] || h.Min() != sorted[0] {
				t.Fatalf("Min, Max = %d, %d, want %d, %d", h.Min(), h.Max(), sorted[0], sorted[len(sorted)-1])
			}
			for _, q := range []float64{0, 0.001, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
				want := exactQuantile(sorted, q)
				got := h.Quantile(q)
				if diff := math.Abs(float64(got - want)); diff > float64(want)/histSub {
					t.Errorf("Quantile(%v) = %d, want %d within 1/%d (off by %.3f%%)", q, got, want, histSub, 100*diff/float64(want))
				}
			}
		})
	}
}

func TestHistogramEmpty(t *testing.T) {
	var h histogram
	if h.Quantile(0.5) != 0 || h.Max() != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Fatalf("empty histogram: Quantile %d Max %d Mean %v Count %d", h.Quantile(0.5), h.Max(), h.Mean(), h.Count())
	}
}

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	check := func(v int64) {
		i := histIndex(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d, outside [0, %d)", v, i, histBuckets)
		}
		lo, hi := histBounds(i)
		if v < lo || v > hi {
			t.Fatalf("%d in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if lo >= histSub && float64(hi-lo+1)/float64(lo) > 1.0/histSub {
			t.Fatalf("bucket %d = [%d, %d] wider than 1/%d of its values", i, lo, hi, histSub)
		}
	}
	for v := int64(0); v < 1<<16; v++ {
		i := histIndex(v)
		if i < prev {
			t.Fatalf("histIndex not monotonic at %d", v)
		}
		prev = i
		check(v)
	}
	for k := 16; k < 63; k++ {
		check(1<<k - 1)
		check(1 << k)
		check(1<<k + 1)
	}
	check(math.MaxInt64)
}

func TestHistogramMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, all histogram
	for i := range 20000 {
		v := rng.Int64N(int64(10 * time.Millisecond))
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	var m histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&histogram{})
	if m.counts != all.counts || m.Count() != all.Count() || m.Max() != all.Max() || m.Min() != all.Min() {
		t.Fatal("merge of the halves differs from the whole")
	}
	for _, q := range []float64{0.5, 0.99, 0.999} {
		if m.Quantile(q) != all.Quantile(q) {
			t.Errorf("Quantile(%v): merged %d, whole %d", q, m.Quantile(q), all.Quantile(q))
		}
	}
}

// fakeClock advances only when a pacer sleeps on it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func TestPacerFakeClock(t *testing.T) {
	for _, rate := range []float64{10, 100, 2000, 10240, 250000} {
		clock := &fakeClock{now: time.Unix(1000, 0)}
		start := clock.Now()
		p := newPacer(rate, clock)
		// Count the sends that go within the first second, and the largest
		// burst (sends with no sleep in between).
		var sent, burst, maxBurst int
		for {
			before := clock.Now()
			if err := p.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			now := clock.Now()
			if now.Sub(start) >= time.Second {
				break
			}
			sent++
			if now.Equal(before) {
				burst++
			} else {
				burst = 1
			}
			maxBurst = max(maxBurst, burst)
		}
		if math.Abs(float64(sent)-rate) > 0.1*rate {
			t.Errorf("rate %v: %d sends in 1s, want within 10%%", rate, sent)
		}
		// Bursts are bounded by pacerSlack's worth of sends, not a second's.
		if limit := int(rate*pacerSlack.Seconds()) + 2; maxBurst > limit {
			t.Errorf("rate %v: burst of %d sends, want at most %d", rate, maxBurst, limit)
		}
	}
}

func TestPacerRealClock(t *testing.T) {
	const rate = 5000
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p := newPacer(rate, nil)
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range 4 { // shared by several senders, as producers share it
		wg.Go(func() {
			for p.Wait(ctx) == nil {
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	if n := float64(sent.Load()); math.Abs(n-rate) > 0.1*rate {
		t.Fatalf("%v sends in 1s at %d/s, want within 10%%", n, rate)
	}
	if newPacer(0, nil) != nil || (*pacer)(nil).Wait(context.Background()) != nil {
		t.Fatal("rate 0 must not pace")
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "1024", want: 1024},
		{in: "2GiB", want: 2 << 30},
		{in: "512MiB", want: 512 << 20},
		{in: "64KB", want: 64000},
		{in: "1.5G", want: 3 << 29},
		{in: "1e9", want: 1e9},
		{in: "10 B", want: 10},
		{in: "GiB", bad: true},
		{in: "-1MiB", bad: true},
		{in: "lots", bad: true},
	}
	for _, tt := range tests {
		got, err := parseBytes(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, bad %v", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestParseBrokerSample(t *testing.T) {
	text := "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n" +
		"# TYPE process_cpu_seconds_total counter\n" +
		"process_cpu_seconds_total_other 9\n" +
		"process_cpu_seconds_total 12.34\n" +
		`kafka_server_brokertopicmetrics_remotecopybytes_total{topic="t"} 1.048576e+06` + "\n" +
		`kafka_server_brokertopicmetrics_remotecopybytes_total{topic="t2"} 7` + "\n" +
		`kafka_server_brokertopicmetrics_remotecopyrequests_total{topic="t"} 3` + "\n" +
		`kafka_server_brokertopicmetrics_remotefetchbytes_total{topic="t"} 42` + "\n" +
		`kafka_server_brokertopicmetrics_remotecopylagbytes{topic="t"} 5` + "\n" +
		`kafka_server_brokertopicmetrics_remotecopylagsegments{topic="t"} 1` + "\n" +
		`kafka_server_brokertopicmetrics_remotecopylagsegments_other{topic="t"} 8` + "\n"
	got, err := parseBrokerSample(strings.NewReader(text), "t")
	want := brokerSample{cpuSeconds: 12.34, remoteCopyBytes: 1 << 20, remoteCopyRequests: 3, remoteFetchBytes: 42, copyLagBytes: 5, copyLagSegments: 1}
	if err != nil || got != want {
		t.Fatalf("parseBrokerSample = %+v, %v; want %+v", got, err, want)
	}
	if got, err := parseBrokerSample(strings.NewReader(text), "other"); err != nil || got != (brokerSample{cpuSeconds: 12.34}) {
		t.Fatalf("another topic: %+v, %v", got, err)
	}
	if _, err := parseBrokerSample(strings.NewReader("up 1\n"), "t"); err == nil {
		t.Fatal("want an error when process_cpu_seconds_total is missing")
	}
}

// startBenchBroker starts an in-process broker and returns its bootstrap
// address and /metrics URL.
func startBenchBroker(t *testing.T, overrides ...string) (seed, metrics string) {
	t.Helper()
	b := brokertest.Start(t, append([]string{"moldau.metrics.listener=127.0.0.1:0"}, overrides...)...)
	return b.Addr("").String(), "http://" + b.MetricsAddr().String() + "/metrics"
}

func runBenchJSON[T any](t *testing.T, ctx context.Context, args ...string) T {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := runBench(ctx, append(args, "--json"), &stdout, &stderr); err != nil {
		t.Fatalf("bench %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	var out T
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("bench %v: decoding %q: %v", args, stdout.String(), err)
	}
	return out
}

func checkSummary(t *testing.T, s benchSummary, wantLatency bool) {
	t.Helper()
	if s.Errors != 0 || len(s.ErrorCounts) != 0 || s.Aborted != 0 || s.Interrupted {
		t.Errorf("%s: errors %d %v, aborted %d, interrupted %v", s.Mode, s.Errors, s.ErrorCounts, s.Aborted, s.Interrupted)
	}
	l := s.Latency
	if l == nil || l.Count == 0 {
		t.Fatalf("%s: no latency samples", s.Mode)
	}
	if wantLatency && (l.P50 <= 0 || l.Max <= 0) {
		t.Errorf("%s: latency p50 %v max %v, want > 0", s.Mode, l.P50, l.Max)
	}
	if !(l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("%s: latency not ordered: %+v", s.Mode, *l)
	}
	if s.Bytes != s.Records*int64(s.RecordSize) || s.RecordsPerSec <= 0 || s.MiBPerSec <= 0 || s.ElapsedSeconds <= 0 {
		t.Errorf("%s: bytes %d records %d rate %v MiB/s %v elapsed %v", s.Mode, s.Bytes, s.Records, s.RecordsPerSec, s.MiBPerSec, s.ElapsedSeconds)
	}
	if s.BrokerCPUSeconds == nil || *s.BrokerCPUSeconds <= 0 || s.BrokerCPUSecondsPerGiB == nil || *s.BrokerCPUSecondsPerGiB <= 0 || s.BrokerCPUCores == nil {
		t.Errorf("%s: broker CPU figures missing: %v %v %v", s.Mode, s.BrokerCPUSeconds, s.BrokerCPUCores, s.BrokerCPUSecondsPerGiB)
	}
}

func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	seed, metrics := startBenchBroker(t)
	ctx := context.Background()
	common := []string{"--brokers", seed, "--topic", "bench-e2e-test", "--metrics-url", metrics, "--record-size", "512"}

	prod := runBenchJSON[benchSummary](t, ctx, append([]string{"produce", "--records", "20000", "--acks", "1", "--producers", "2", "--delete-topic=false"}, common...)...)
	if prod.Records != 20000 || prod.Partitions != 8 || prod.LatencyKind != "produce" {
		t.Errorf("produce: records %d partitions %d kind %s, want 20000, 8, produce", prod.Records, prod.Partitions, prod.LatencyKind)
	}
	checkSummary(t, prod, true)

	cons := runBenchJSON[benchSummary](t, ctx, append([]string{"consume", "--consumers", "3", "--duration", "30s"}, common...)...)
	if cons.Records != 20000 || cons.Consumers != 3 || cons.LatencyKind != "poll" {
		t.Errorf("consume: records %d consumers %d kind %s, want 20000, 3, poll", cons.Records, cons.Consumers, cons.LatencyKind)
	}
	checkSummary(t, cons, false)

	// --records stops a consumer early.
	part := runBenchJSON[benchSummary](t, ctx, append([]string{"consume", "--records", "1234"}, common...)...)
	if part.Records != 1234 {
		t.Errorf("consume --records 1234: read %d", part.Records)
	}

	e2e := runBenchJSON[benchSummary](t, ctx, append([]string{"e2e", "--duration", "2s", "--rate", "2000", "--consumers", "2", "--linger", "1ms", "--delete-topic"}, common...)...)
	if e2e.Records < 3600 || e2e.Records > 4400 || e2e.Produced != e2e.Records || e2e.Lost != 0 || e2e.LatencyKind != "e2e" {
		t.Errorf("e2e: received %d of %d produced (lost %d), want 4000±10%% and all", e2e.Records, e2e.Produced, e2e.Lost)
	}
	if e2e.AckLatency == nil || e2e.AckLatency.Count != uint64(e2e.Produced) {
		t.Errorf("e2e: ack latency %+v", e2e.AckLatency)
	}
	checkSummary(t, e2e, true)

	// The topic was deleted: consume now says so.
	err := runBench(ctx, append([]string{"consume"}, common...), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("consume after --delete-topic: %v, want a missing topic", err)
	}

	// The text summary, and a run cut short as by Ctrl-C.
	cctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	var stdout bytes.Buffer
	start := time.Now()
	if err := runBench(cctx, []string{"produce", "--brokers", seed, "--topic", "bench-interrupt", "--duration", "1m", "--rate", "1000"}, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 20*time.Second || !strings.Contains(stdout.String(), "(interrupted)") || !strings.Contains(stdout.String(), "throughput") {
		t.Errorf("interrupted run took %v and printed:\n%s", time.Since(start), stdout.String())
	}
}

// TestBenchTransactions: with --transaction-records each producer commits
// every N records; a read_committed consumer then sees every record.
func TestBenchTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	seed, metrics := startBenchBroker(t)
	ctx := context.Background()
	s := runBenchJSON[benchSummary](t, ctx, "produce", "--brokers", seed, "--topic", "bench-txn", "--metrics-url", metrics,
		"--records", "2050", "--producers", "2", "--transaction-records", "100", "--record-size", "100", "--delete-topic=false")
	checkSummary(t, s, true)
	// 2,050 records split between two producers in whole transactions
	// of 100 but the last of each: 21 or 22 commits.
	if s.Records != 2050 || s.TransactionRecords != 100 || s.Transactions < 21 || s.Transactions > 22 {
		t.Errorf("records %d, transactions %d of %d, want 2050 in 21 or 22 of 100", s.Records, s.Transactions, s.TransactionRecords)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumeTopics("bench-txn"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n := 0
	for n < 2050 && cctx.Err() == nil {
		n += cl.PollFetches(cctx).NumRecords()
	}
	if n != 2050 {
		t.Errorf("read_committed consumer read %d records, want 2050", n)
	}

	for _, bad := range [][]string{
		{"consume", "--transaction-records", "10"},
		{"produce", "--transaction-records", "10", "--acks", "1"},
		{"produce", "--transaction-records", "-1"},
	} {
		if err := runBench(ctx, append(bad, "--brokers", seed), &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--transaction-records") {
			t.Errorf("%v: %v, want an error naming --transaction-records", bad, err)
		}
	}
}

func TestBenchFloor(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	s := runBenchJSON[floorSummary](t, context.Background(), "floor", "--bytes", "16MiB", "--record-size", "1000", "--batch-bytes", "16384", "--dir", t.TempDir())
	if s.Bytes < 16<<20 || s.Bytes >= 16<<20+16000 {
		t.Errorf("floor moved %d bytes, want 16 MiB rounded up to a whole frame", s.Bytes)
	}
	if s.BatchBytes != 16000 || s.Records != s.Frames*16 || s.Bytes != s.Frames*16000 {
		t.Errorf("floor: batch %d, frames %d, records %d, bytes %d", s.BatchBytes, s.Frames, s.Records, s.Bytes)
	}
	if s.MiBPerSec <= 0 || s.CPUSeconds <= 0 || s.CPUSecondsPerGiB <= 0 {
		t.Errorf("floor: %v MiB/s, %v CPU-s, %v CPU-s/GiB", s.MiBPerSec, s.CPUSeconds, s.CPUSecondsPerGiB)
	}
	if s.ServerCPUSeconds == nil || s.ServerCPUSecondsPerGiB == nil {
		t.Errorf("floor: no server CPU figures")
	}
	// Every goroutine it started has stopped.
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > goroutines; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after floor, %d before", runtime.NumGoroutine(), goroutines)
		}
	}
}

func TestBenchUsage(t *testing.T) {
	var stderr bytes.Buffer
	if err := runBench(context.Background(), []string{"produce", "--help"}, &bytes.Buffer{}, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--metrics-url", "--rate", "broker_cpu_seconds_per_gib", "latency_ms"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if err := runBench(context.Background(), []string{"nope"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("unknown mode: want an error")
	}
	if err := runBench(context.Background(), []string{"e2e", "--record-size", "4"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("e2e with 4-byte records: want an error")
	}
}

// TestBenchGroups: bench consume --group and --share-group read every
// record produced, through three members of each kind of group.
func TestBenchGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	seed, metrics := startBenchBroker(t)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if res, err := kadm.NewClient(cl).UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "share.version", MaxVersionLevel: 1, UpgradeType: 1}); err != nil || res.Error() != nil {
		t.Fatalf("share.version 1: %v %v", err, res.Error())
	}
	common := []string{"--brokers", seed, "--topic", "bench-groups-test", "--metrics-url", metrics, "--record-size", "100"}
	runBenchJSON[benchSummary](t, ctx, append([]string{"produce", "--records", "20000", "--acks", "1", "--delete-topic=false"}, common...)...)
	for _, flag := range []string{"--group", "--share-group"} {
		s := runBenchJSON[benchSummary](t, ctx, append([]string{"consume", "--consumers", "3", flag, "bench" + flag, "--duration", "60s"}, common...)...)
		if s.Records != 20000 || s.Consumers != 3 || s.Errors != 0 {
			t.Errorf("consume %s: records %d consumers %d errors %d, want 20000, 3, 0", flag, s.Records, s.Consumers, s.Errors)
		}
	}
	for _, bad := range [][]string{{"produce", "--group", "g"}, {"consume", "--group", "g", "--share-group", "s"}} {
		if err := runBench(ctx, append(bad, "--brokers", seed), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("bench %v: no error", bad)
		}
	}
}

// TestBenchTiered: the figures of tiered storage (issue 24). bench upload
// turns tiering on for a filled topic and follows its copies to the end;
// a consumer from the beginning then reads what local retention deleted
// from the store, and a produce run into a tiered topic reports the
// copies made meanwhile.
func TestBenchTiered(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	seed, metrics := startBenchBroker(t, "remote.log.storage.system.enable=true", "rsm.config.dir="+t.TempDir(),
		"remote.log.manager.task.interval.ms=100", "log.retention.check.interval.ms=100")
	ctx := context.Background()
	common := []string{"--brokers", seed, "--topic", "bench-tiered", "--metrics-url", metrics}
	prod := runBenchJSON[benchSummary](t, ctx, append([]string{"produce", "--records", "6000", "--acks", "1", "--partitions", "2",
		"--record-size", "1024", "--delete-topic=false", "--topic-config", "segment.bytes=1048576"}, common...)...)
	if prod.RemoteCopyBytes == nil || *prod.RemoteCopyBytes != 0 {
		t.Fatalf("produce into a topic not tiered: %v bytes copied", prod.RemoteCopyBytes)
	}
	up := runBenchJSON[uploadSummary](t, ctx, append([]string{"upload", "--settle", "1s", "--timeout", "1m",
		"--set", "remote.storage.enable=true", "--set", "local.retention.bytes=1048576"}, common...)...)
	// Two partitions of about 3 MiB each: two closed segments each.
	if up.TimedOut || up.Interrupted || up.CopiedSegments < 4 || up.CopiedBytes < 4<<20 || up.ElapsedSeconds <= 0 ||
		up.MiBPerSec <= 0 || up.BrokerCPUSeconds <= 0 || up.BrokerCPUSecondsPerGiB == nil || up.CopyLagBytes != 0 {
		t.Fatalf("upload: %+v", up)
	}
	cons := runBenchJSON[benchSummary](t, ctx, append([]string{"consume", "--duration", "30s"}, common...)...)
	if cons.Records != 6000 || cons.RemoteFetchBytes == nil || *cons.RemoteFetchBytes < 2<<20 {
		t.Fatalf("consume from the beginning: %d records, %v bytes from the store", cons.Records, cons.RemoteFetchBytes)
	}
	more := runBenchJSON[benchSummary](t, ctx, append([]string{"produce", "--records", "4000", "--acks", "1", "--record-size", "1024"}, common...)...)
	checkSummary(t, more, true)
	if more.RemoteCopyBytes == nil {
		t.Fatal("produce into a tiered topic: no copy figure")
	}
}
