package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runKafkaBench runs produce, consume or e2e: it prepares the topic,
// measures the broker's CPU around the load when asked, prints the summary
// and deletes the topic if it should.
//
// Contexts: ctx is the interrupt (Ctrl-C); a run context derived from it
// also ends at --duration and stops new sends. Records are produced with
// ctx, not the run context, so those still buffered when the duration ends
// are delivered; after Ctrl-C they are aborted and counted as such.
func runKafkaBench(ctx context.Context, c *kafkaBenchConfig, stdout, stderr io.Writer) error {
	admCl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.brokers...)}, c.tlsOpts...)...)
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	setupCtx, cancelSetup := context.WithTimeout(ctx, 30*time.Second)
	created, partitions, err := prepareTopic(setupCtx, adm, c)
	cancelSetup()
	if err != nil {
		return err
	}
	if (created && !c.deleteTopicSet) || (c.deleteTopicSet && c.deleteTopic) {
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, derr := adm.DeleteTopic(dctx, c.topic); derr != nil {
				fmt.Fprintf(stderr, "bench: deleting topic %s: %v\n", c.topic, derr)
			}
		}()
	}

	sum := &benchSummary{
		Mode: c.mode, Topic: c.topic, Partitions: len(partitions), RecordSize: c.recordSize,
		Acks: c.acks, Compression: c.compression, Producers: c.producers, Consumers: c.consumers,
		TargetRate: c.rate,
	}
	switch c.mode {
	case "produce":
		sum.Consumers = 0
	case "consume":
		sum.Producers, sum.Acks, sum.Compression, sum.TargetRate = 0, "", "", 0
		sum.Consumers = min(c.consumers, len(partitions))
	case "e2e":
		sum.Consumers = min(c.consumers, len(partitions))
	}

	var broker0 brokerSample
	if c.metricsURL != "" {
		if broker0, err = scrapeBroker(ctx, c.metricsURL, c.topic); err != nil {
			return fmt.Errorf("--metrics-url: %w", err)
		}
	}
	user0, sys0 := processCPU()

	switch c.mode {
	case "produce":
		err = benchProduce(ctx, c, sum, stderr)
	case "consume":
		err = benchConsume(ctx, c, adm, partitions, sum, stderr)
	case "e2e":
		err = benchE2E(ctx, c, adm, partitions, sum, stderr)
	}
	if err != nil {
		return err
	}

	user1, sys1 := processCPU()
	sum.ClientCPUSeconds = (user1 - user0 + sys1 - sys0).Seconds()
	if c.metricsURL != "" {
		// The run may have been interrupted: scrape with a fresh context.
		broker1, err := scrapeBroker(context.Background(), c.metricsURL, c.topic)
		if err != nil {
			fmt.Fprintf(stderr, "bench: --metrics-url: %v\n", err)
		} else {
			cpu := broker1.cpuSeconds - broker0.cpuSeconds
			sum.BrokerCPUSeconds = &cpu
			copied := int64(broker1.remoteCopyBytes - broker0.remoteCopyBytes)
			fetched := int64(broker1.remoteFetchBytes - broker0.remoteFetchBytes)
			sum.RemoteCopyBytes, sum.RemoteFetchBytes = &copied, &fetched
			cores := 0.0
			if sum.ElapsedSeconds > 0 {
				cores = cpu / sum.ElapsedSeconds
			}
			sum.BrokerCPUCores = &cores
			if sum.Bytes > 0 {
				perGiB := cpu / (float64(sum.Bytes) / gib)
				sum.BrokerCPUSecondsPerGiB = &perGiB
			}
		}
	}
	sum.Interrupted = ctx.Err() != nil
	return sum.write(stdout, c.json)
}

// prepareTopic creates the topic if asked and it is missing, and waits
// until every partition has a leader. It returns whether it created the
// topic and the partitions, sorted.
func prepareTopic(ctx context.Context, adm *kadm.Client, c *kafkaBenchConfig) (created bool, partitions []int32, err error) {
	if c.mode != "consume" && c.createTopic {
		_, err := adm.CreateTopic(ctx, c.partitions, c.replicationFactor, c.topicConfigs, c.topic)
		switch {
		case err == nil:
			created = true
		case errors.Is(err, kerr.TopicAlreadyExists):
		default:
			return false, nil, fmt.Errorf("creating topic %s: %w", c.topic, err)
		}
	}
	for {
		details, err := adm.ListTopics(ctx, c.topic)
		if err == nil {
			td, ok := details[c.topic]
			switch {
			case (!ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition)) && !created:
				hint := ""
				if c.mode == "consume" {
					hint = " (run 'moldau bench produce --delete-topic=false' first)"
				}
				return false, nil, fmt.Errorf("topic %s does not exist%s", c.topic, hint)
			case ok && td.Err == nil && len(td.Partitions) > 0:
				ready := true
				partitions = partitions[:0]
				for p, pd := range td.Partitions {
					ready = ready && pd.Err == nil && pd.Leader >= 0
					partitions = append(partitions, p)
				}
				if ready {
					slices.Sort(partitions)
					return created, partitions, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return created, nil, fmt.Errorf("waiting for topic %s: %w", c.topic, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: expected none, gzip, snappy, lz4 or zstd", name)
}

// producerOpts are the options of producer i.
func (c *kafkaBenchConfig) producerOpts(i int) []kgo.Opt {
	codec, _ := compressionCodec(c.compression) // checked when parsing
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.brokers...),
		kgo.DefaultProduceTopic(c.topic),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerBatchMaxBytes(c.maxBatchBytes),
	}
	opts = append(opts, c.tlsOpts...)
	switch c.acks {
	case "all": // idempotent, kgo's default
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	}
	if c.lingerSet {
		opts = append(opts, kgo.ProducerLinger(c.linger))
	}
	if c.txnRecords > 0 {
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("moldau-bench-%d-%d", os.Getpid(), i)))
	}
	return opts
}

// benchPayload is a record value of size random capital letters, as
// kafka-producer-perf-test sends: somewhat compressible, never all zeroes.
func benchPayload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'A' + byte(rand.IntN(26))
	}
	return b
}

// produceLoad runs c.producers clients, paced together at c.rate, until
// runCtx ends or c.records are sent, then flushes them. Each acknowledged
// record goes to stats with its latency from the Produce call. With base
// set (e2e), every value starts with its send time as nanoseconds since
// base, big-endian.
func produceLoad(intr, runCtx context.Context, c *kafkaBenchConfig, stats *benchStats, base *time.Time) error {
	clients := make([]*kgo.Client, 0, c.producers)
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i := range c.producers {
		cl, err := kgo.NewClient(c.producerOpts(i)...)
		if err != nil {
			return err
		}
		clients = append(clients, cl)
	}
	payload := benchPayload(c.recordSize)
	p := newPacer(c.rate, nil)
	var issued atomic.Int64
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Go(func() {
			txn := benchTxn{cl: cl, intr: intr, every: c.txnRecords, stats: stats}
			defer txn.commit()
			for {
				if err := p.Wait(runCtx); err != nil {
					return
				}
				if c.records > 0 && issued.Add(1) > c.records {
					return
				}
				if !txn.before() {
					return
				}
				value := payload
				start := time.Now()
				if base != nil {
					value = make([]byte, len(payload))
					copy(value, payload)
					binary.BigEndian.PutUint64(value, uint64(start.Sub(*base)))
				}
				cl.Produce(intr, &kgo.Record{Topic: c.topic, Value: value}, func(r *kgo.Record, err error) {
					switch {
					case err == nil:
						stats.done(len(r.Value), time.Since(start))
					case intr.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed)):
						stats.abort()
					default:
						stats.failed(err)
					}
				})
				txn.after()
			}
		})
	}
	wg.Wait()
	for _, cl := range clients {
		// Flush returns early only on Ctrl-C; the promises of what it cut
		// off have run (aborted) by the time Close returns.
		_ = cl.Flush(intr)
	}
	return nil
}

// benchTxn makes a producer commit a transaction every `every` records
// (none when every is 0): before the first record of each it begins one,
// after the last it flushes and commits.
type benchTxn struct {
	cl    *kgo.Client
	intr  context.Context
	every int
	stats *benchStats
	n     int // records in the open transaction
}

// before begins a transaction if none is open; false if that failed.
func (t *benchTxn) before() bool {
	if t.every == 0 || t.n > 0 {
		return true
	}
	if err := t.cl.BeginTransaction(); err != nil {
		t.stats.failed(err)
		return false
	}
	return true
}

// after counts a record and commits once the transaction has every.
func (t *benchTxn) after() {
	if t.every == 0 {
		return
	}
	if t.n++; t.n == t.every {
		t.commit()
	}
}

// commit flushes and commits the open transaction, if any.
func (t *benchTxn) commit() {
	if t.every == 0 || t.n == 0 {
		return
	}
	t.n = 0
	if err := t.cl.Flush(t.intr); err != nil {
		t.stats.failed(err)
	}
	switch err := t.cl.EndTransaction(t.intr, kgo.TryCommit); {
	case err == nil:
		t.stats.transactions.Add(1)
	case t.intr.Err() == nil:
		t.stats.failed(err)
	}
}

func benchProduce(ctx context.Context, c *kafkaBenchConfig, sum *benchSummary, stderr io.Writer) error {
	stats := newBenchStats()
	progCtx, stopProgress := context.WithCancel(ctx)
	var progWG sync.WaitGroup
	progWG.Go(func() { progress(progCtx, stderr, stats, "produce") })
	defer func() { stopProgress(); progWG.Wait() }()

	runCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	start := time.Now()
	if err := produceLoad(ctx, runCtx, c, stats, nil); err != nil {
		return err
	}
	sum.LatencyKind = "produce"
	sum.fill(stats, time.Since(start))
	sum.TransactionRecords, sum.Transactions = c.txnRecords, stats.transactions.Load()
	return nil
}

// consumePlan is where each partition's reading starts and, for consume,
// the end offset at which it is done.
type consumePlan struct {
	start map[int32]int64
	end   map[int32]int64 // nil: read until stopped (e2e)
}

// consumeLoad runs up to c.consumers clients, each assigned every
// c.consumers-th partition directly (no consumer group), until ctx ends,
// every partition reaches its end offset, or limit records (0: none) are
// read. With base set (e2e), each record's latency is from the send time in
// its first 8 bytes; otherwise each poll that returned records adds how long
// it waited. ready is closed once every client exists.
func consumeLoad(ctx context.Context, c *kafkaBenchConfig, partitions []int32, plan consumePlan, stats *benchStats, base *time.Time, limit int64, ready chan<- struct{}) error {
	n := min(c.consumers, len(partitions))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var consumed atomic.Int64
	var clients []*kgo.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	type assignment struct {
		cl  *kgo.Client
		own []int32
	}
	var assigned []assignment
	for i := range n {
		offsets := make(map[int32]kgo.Offset)
		var own []int32
		for j, p := range partitions {
			if j%n != i {
				continue
			}
			if plan.end != nil && plan.start[p] >= plan.end[p] {
				continue // empty: nothing to read
			}
			offsets[p] = kgo.NewOffset().At(plan.start[p])
			own = append(own, p)
		}
		if len(own) == 0 {
			continue
		}
		cl, err := kgo.NewClient(append([]kgo.Opt{
			kgo.SeedBrokers(c.brokers...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: offsets}),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		}, c.tlsOpts...)...)
		if err != nil {
			close(ready)
			return err
		}
		clients = append(clients, cl)
		assigned = append(assigned, assignment{cl, own})
	}
	close(ready)

	var wg sync.WaitGroup
	for _, a := range assigned {
		wg.Go(func() {
			remaining := len(a.own)
			for plan.end == nil || remaining > 0 {
				t0 := time.Now()
				fetches := a.cl.PollFetches(ctx)
				waited := time.Since(t0)
				fetches.EachError(func(_ string, _ int32, err error) {
					if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
						return
					}
					stats.failed(err)
				})
				got := 0
				fetches.EachRecord(func(r *kgo.Record) {
					if plan.end != nil && r.Offset >= plan.end[r.Partition] {
						return // past the end listed at the start
					}
					if limit > 0 {
						k := consumed.Add(1)
						if k > limit {
							return
						}
						if k == limit {
							cancel()
						}
					}
					lat := time.Duration(-1)
					if base != nil && len(r.Value) >= 8 {
						lat = time.Since(*base) - time.Duration(binary.BigEndian.Uint64(r.Value))
					}
					stats.done(len(r.Value), lat)
					got++
					if plan.end != nil && r.Offset+1 == plan.end[r.Partition] {
						remaining--
					}
				})
				if base == nil && got > 0 {
					stats.latency(waited)
				}
				if ctx.Err() != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return nil
}

func benchConsume(ctx context.Context, c *kafkaBenchConfig, adm *kadm.Client, partitions []int32, sum *benchSummary, stderr io.Writer) error {
	starts, err := adm.ListStartOffsets(ctx, c.topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("listing start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, c.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("listing end offsets: %w", err)
	}
	plan := consumePlan{start: make(map[int32]int64), end: make(map[int32]int64)}
	var available int64
	for _, p := range partitions {
		s, _ := starts.Lookup(c.topic, p)
		e, _ := ends.Lookup(c.topic, p)
		plan.start[p], plan.end[p] = s.Offset, e.Offset
		available += max(e.Offset-s.Offset, 0)
	}
	if available == 0 {
		fmt.Fprintf(stderr, "bench: topic %s is empty (run 'moldau bench produce --delete-topic=false' first)\n", c.topic)
	}

	stats := newBenchStats()
	progCtx, stopProgress := context.WithCancel(ctx)
	var progWG sync.WaitGroup
	progWG.Go(func() { progress(progCtx, stderr, stats, "poll") })
	defer func() { stopProgress(); progWG.Wait() }()

	runCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	start := time.Now()
	if c.group != "" || c.shareGroup != "" {
		limit := c.records
		if limit == 0 {
			limit = available
		}
		if err := groupConsumeLoad(runCtx, c, stats, limit); err != nil {
			return err
		}
		sum.Consumers = c.consumers
		sum.LatencyKind = "poll"
		sum.fill(stats, time.Since(start))
		return nil
	}
	if err := consumeLoad(runCtx, c, partitions, plan, stats, nil, c.records, make(chan struct{})); err != nil {
		return err
	}
	sum.LatencyKind = "poll"
	sum.fill(stats, time.Since(start))
	return nil
}

func benchE2E(ctx context.Context, c *kafkaBenchConfig, adm *kadm.Client, partitions []int32, sum *benchSummary, stderr io.Writer) error {
	// Consumers start at the exact end offsets, listed before any producer
	// starts, so they see every record of this run and nothing older.
	ends, err := adm.ListEndOffsets(ctx, c.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("listing end offsets: %w", err)
	}
	plan := consumePlan{start: make(map[int32]int64)}
	for _, p := range partitions {
		e, _ := ends.Lookup(c.topic, p)
		plan.start[p] = e.Offset
	}

	base := time.Now() // one process: send and receipt times share a clock
	stats, acks := newBenchStats(), newBenchStats()
	progCtx, stopProgress := context.WithCancel(ctx)
	var progWG sync.WaitGroup
	progWG.Go(func() { progress(progCtx, stderr, stats, "e2e") })
	defer func() { stopProgress(); progWG.Wait() }()

	consCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	ready, consDone := make(chan struct{}), make(chan struct{})
	var consErr error
	go func() {
		defer close(consDone)
		consErr = consumeLoad(consCtx, c, partitions, plan, stats, &base, 0, ready)
	}()
	<-ready

	runCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	start := time.Now()
	prodErr := produceLoad(ctx, runCtx, c, acks, &base)

	// Wait for the consumers to receive what was acknowledged.
	produced := acks.count()
	deadline := time.Now().Add(c.drainTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
drain:
	for time.Now().Before(deadline) {
		if stats.count() >= produced {
			break
		}
		select {
		case <-ctx.Done():
			break drain
		case <-consDone:
			break drain
		case <-tick.C:
		}
	}
	stopConsumers()
	<-consDone
	elapsed := time.Since(start)
	if prodErr != nil {
		return prodErr
	}
	if consErr != nil {
		return consErr
	}

	sum.LatencyKind = "e2e"
	sum.fill(stats, elapsed)
	_, _, ackErrs, aborted, ackHist, ackErrCounts := acks.snapshot()
	sum.AckLatency = summarizeLatency(ackHist)
	sum.Produced = produced
	sum.Lost = max(produced-sum.Records, 0)
	sum.Errors += ackErrs
	sum.Aborted += aborted
	sum.ErrorCounts = mergeErrorCounts(sum.ErrorCounts, ackErrCounts)
	return nil
}

// mergeErrorCounts adds b to a, most frequent first, at most maxErrorKinds.
func mergeErrorCounts(a, b []errorCount) []errorCount {
	m := make(map[string]int64)
	for _, e := range slices.Concat(a, b) {
		m[e.Error] += e.Count
	}
	out := make([]errorCount, 0, len(m))
	for msg, n := range m {
		out = append(out, errorCount{msg, n})
	}
	slices.SortFunc(out, func(x, y errorCount) int {
		if x.Count != y.Count {
			return int(y.Count - x.Count)
		}
		if x.Error < y.Error {
			return -1
		}
		return 1
	})
	if len(out) > maxErrorKinds {
		out = out[:maxErrorKinds]
	}
	return out
}
