package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func produceCommand() *command {
	return &command{
		name: "produce", args: "TOPIC", minArgs: 1, maxArgs: 1, client: true,
		summary: "Produce records: one per line of stdin, or --value.",
		long: `Reads stdin and produces one record per line (the "\n" is not part of the
record; a last line without one is a record too), in order. With
--key-separator SEP, the text before the first SEP is the key and the rest
the value; a line without SEP has a null key. With --value, stdin is not
read and --count records are produced with that value. --key and --header
apply to every record.

Prints how many records went to each partition and their offsets. Stops at
the first record the cluster refuses, prints what was produced, and exits
1 naming the record (its line number when reading stdin). Shows progress
on stderr when it is a terminal.

--acks all (the default) uses the idempotent producer: no duplicates or
reordering on retries. With --acks 1 or 0 one request per broker is in
flight at a time, so records stay in order.`,
		example: `  seq 1000 | moldau produce orders
  printf 'k1:v1\nk2:v2\n' | moldau produce orders --key-separator :
  moldau produce orders --key user-7 --value '{"n":1}' -H source=cli --count 3
  moldau produce orders --partition 2 --acks 1 --compression zstd < events.txt`,
		setup: func(fs *pflag.FlagSet) runner {
			o := &produceOpts{}
			fs.StringVarP(&o.key, "key", "k", "", "key of every record (default: null)")
			fs.StringVar(&o.value, "value", "", "produce this value instead of reading stdin")
			fs.StringArrayVarP(&o.headers, "header", "H", nil, "header key=value on every record (repeatable)")
			fs.IntVarP(&o.count, "count", "n", 1, "with --value: how many records to produce")
			fs.Int32VarP(&o.partition, "partition", "p", -1, "produce to this partition (-1: by key hash, or spread when null)")
			fs.StringVar(&o.acks, "acks", "all", "acknowledgements: all, 1 or 0")
			fs.StringVarP(&o.compression, "compression", "z", "none", "compression: none, gzip, snappy, lz4 or zstd")
			fs.StringVarP(&o.keySep, "key-separator", "K", "", "split each stdin line at the first SEP into key and value")
			fs.IntVar(&o.maxLine, "max-line-bytes", 1<<20, "longest stdin line accepted")
			fs.BoolVar(&o.tombstone, "tombstone", false, "produce empty values as null (tombstones for compacted topics)")
			fs.BoolVar(&o.autoCreate, "allow-auto-topic-creation", false, "let the broker create the topic if it does not exist")
			return func(ctx context.Context, e *env, args []string) error {
				o.topic = args[0]
				o.valueSet = fs.Changed("value")
				o.keySet = fs.Changed("key")
				o.countSet = fs.Changed("count")
				return runProduce(ctx, e, o)
			}
		},
	}
}

type produceOpts struct {
	topic, key, value, acks, compression, keySep string
	headers                                      []string
	count, maxLine                               int
	partition                                    int32
	valueSet, keySet, countSet, tombstone        bool
	autoCreate                                   bool
}

func (o *produceOpts) kgoOpts(e *env) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.RecordDeliveryTimeout(e.client.timeout), kgo.ProduceRequestTimeout(e.client.timeout)}
	switch o.acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(1))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(1))
	default:
		return nil, usageErrorf(e, "--acks %q: expected all, 1 or 0", o.acks)
	}
	var codec kgo.CompressionCodec
	switch strings.ToLower(o.compression) {
	case "none", "":
		codec = kgo.NoCompression()
	case "gzip":
		codec = kgo.GzipCompression()
	case "snappy":
		codec = kgo.SnappyCompression()
	case "lz4":
		codec = kgo.Lz4Compression()
	case "zstd":
		codec = kgo.ZstdCompression()
	default:
		return nil, usageErrorf(e, "--compression %q: expected none, gzip, snappy, lz4 or zstd", o.compression)
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if o.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	} else if o.partition != -1 {
		return nil, usageErrorf(e, "--partition %d: expected a partition number, or -1", o.partition)
	}
	if o.autoCreate {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	return opts, nil
}

func (o *produceOpts) recordHeaders(e *env) ([]kgo.RecordHeader, error) {
	var hs []kgo.RecordHeader
	for _, kv := range o.headers {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf(e, "--header %q: expected key=value", kv)
		}
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return hs, nil
}

func runProduce(ctx context.Context, e *env, o *produceOpts) error {
	if !o.valueSet && o.countSet {
		return usageErrorf(e, "--count needs --value (stdin produces one record per line)")
	}
	if o.count < 0 {
		return usageErrorf(e, "--count must not be negative")
	}
	if o.valueSet && o.keySep != "" {
		return usageErrorf(e, "--key-separator splits stdin lines; it does not apply to --value")
	}
	if o.maxLine <= 0 {
		return usageErrorf(e, "--max-line-bytes must be positive")
	}
	opts, err := o.kgoOpts(e)
	if err != nil {
		return err
	}
	headers, err := o.recordHeaders(e)
	if err != nil {
		return err
	}
	cl, err := e.newClient(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := checkProduceTopic(ctx, e, cl, o); err != nil {
		return err
	}

	st := newProduceState(o.acks == "0")
	start := e.now()
	prog := startProgress(e.stderr, e.stderrTTY, func() string {
		return fmt.Sprintf("produced %d records (%s), %d waiting", st.acked.Load(), humanBytes(st.bytes.Load()), st.sent.Load()-st.acked.Load()-st.failed.Load())
	})
	src := newRecordSource(e, o)
	readErr := produceAll(ctx, cl, src, o, headers, st)
	// Wait for every record handed to the client: each is acknowledged,
	// refused or timed out (--timeout) by then.
	flushErr := cl.Flush(context.Background())
	prog.Stop()
	elapsed := e.now().Sub(start)

	if err := printProduced(e, o.topic, st, elapsed); err != nil {
		return err
	}
	switch {
	case st.firstErr != nil:
		return st.recordError(src.fromStdin())
	case readErr != nil:
		return readErr
	case flushErr != nil:
		return flushErr
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted after %d records", st.acked.Load())
	}
	return nil
}

// checkProduceTopic fails fast, with one line, for a missing topic or
// partition, instead of letting the client retry until --timeout.
func checkProduceTopic(ctx context.Context, e *env, cl *kgo.Client, o *produceOpts) error {
	if o.autoCreate {
		return nil
	}
	rctx, cancel := e.requestCtx(ctx)
	defer cancel()
	tds, err := describeTopicsMeta(rctx, adminFor(e, cl), []string{o.topic})
	if err != nil {
		return err
	}
	if n := int32(len(tds[o.topic].Partitions)); o.partition >= n {
		return fmt.Errorf("topic %q has %d partitions: there is no partition %d", o.topic, n, o.partition)
	}
	return nil
}

// produceAll hands every record of src to the client, in order, until the
// source ends, a record fails, or ctx is cancelled.
func produceAll(ctx context.Context, cl *kgo.Client, src *recordSource, o *produceOpts, headers []kgo.RecordHeader, st *produceState) error {
	lines := src.start(ctx)
	for {
		var ln sourceLine
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case ln, ok = <-lines:
		}
		if !ok {
			return src.err()
		}
		if st.hasFailed() {
			src.stop()
			return nil
		}
		r := &kgo.Record{Topic: o.topic, Key: ln.key, Value: ln.value, Headers: headers}
		if o.partition >= 0 {
			r.Partition = o.partition
		}
		if o.tombstone && len(r.Value) == 0 {
			r.Value = nil
		}
		idx := st.sent.Add(1)
		st.bytes.Add(int64(len(r.Key) + len(r.Value)))
		cl.Produce(context.Background(), r, func(r *kgo.Record, err error) { st.done(idx, r, err) })
	}
}

// produceState collects acknowledgements. Promises run on kgo's goroutines.
type produceState struct {
	noAcks                     bool
	sent, acked, failed, bytes atomic.Int64

	mu       sync.Mutex
	parts    map[int32]*producedPartition
	firstErr error
	errIdx   int64 // the 1-based number of the first failed record
	errFlag  atomic.Bool
}

type producedPartition struct {
	Partition   int32 `json:"partition"`
	Records     int64 `json:"records"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
}

func newProduceState(noAcks bool) *produceState {
	return &produceState{noAcks: noAcks, parts: map[int32]*producedPartition{}}
}

func (s *produceState) hasFailed() bool { return s.errFlag.Load() }

func (s *produceState) done(idx int64, r *kgo.Record, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed.Add(1)
		if s.firstErr == nil || idx < s.errIdx {
			s.firstErr, s.errIdx = err, idx
		}
		s.errFlag.Store(true)
		return
	}
	s.acked.Add(1)
	p := s.parts[r.Partition]
	if p == nil {
		p = &producedPartition{Partition: r.Partition, FirstOffset: -1, LastOffset: -1}
		s.parts[r.Partition] = p
	}
	p.Records++
	if s.noAcks {
		return // acks=0: the broker does not say where records went
	}
	if p.FirstOffset < 0 || r.Offset < p.FirstOffset {
		p.FirstOffset = r.Offset
	}
	p.LastOffset = max(p.LastOffset, r.Offset)
}

func (s *produceState) recordError(fromStdin bool) error {
	where := fmt.Sprintf("record %d", s.errIdx)
	if fromStdin {
		where += fmt.Sprintf(" (line %d)", s.errIdx)
	}
	err := s.firstErr
	var ke *kerr.Error
	if errors.As(err, &ke) && (ke == kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("%s: %w", where, err)
	}
	return fmt.Errorf("%s was not produced: %s", where, errorMessage(err))
}

type produceSummary struct {
	Topic      string              `json:"topic"`
	Records    int64               `json:"records"`
	Failed     int64               `json:"failed"`
	Bytes      int64               `json:"bytes"`
	ElapsedMs  int64               `json:"elapsed_ms"`
	Partitions []producedPartition `json:"partitions"`
}

func printProduced(e *env, topic string, st *produceState, elapsed time.Duration) error {
	st.mu.Lock()
	sum := produceSummary{Topic: topic, Records: st.acked.Load(), Failed: st.failed.Load(), Bytes: st.bytes.Load(),
		ElapsedMs: elapsed.Milliseconds(), Partitions: []producedPartition{}}
	for _, p := range st.parts {
		sum.Partitions = append(sum.Partitions, *p)
	}
	st.mu.Unlock()
	sort.Slice(sum.Partitions, func(i, j int) bool { return sum.Partitions[i].Partition < sum.Partitions[j].Partition })
	if e.json {
		return writeJSON(e.stdout, sum)
	}
	t := newTable(e.stdout, "PARTITION", "RECORDS", "FIRST-OFFSET", "LAST-OFFSET")
	for _, p := range sum.Partitions {
		t.row(p.Partition, p.Records, dash(p.FirstOffset), dash(p.LastOffset))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Produced %d records (%s) to %s in %v.\n", sum.Records, humanBytes(sum.Bytes), topic, elapsed.Round(time.Millisecond))
	return nil
}

// recordSource yields the records to produce: stdin lines, or --count
// copies of --value. Reading runs on its own goroutine so Ctrl-C is seen
// while stdin blocks.
type recordSource struct {
	e     *env
	o     *produceOpts
	mu    sync.Mutex
	rerr  error
	quit  chan struct{}
	qonce sync.Once
}

type sourceLine struct{ key, value []byte }

func newRecordSource(e *env, o *produceOpts) *recordSource {
	return &recordSource{e: e, o: o, quit: make(chan struct{})}
}

func (s *recordSource) fromStdin() bool { return !s.o.valueSet }

func (s *recordSource) stop() { s.qonce.Do(func() { close(s.quit) }) }

func (s *recordSource) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rerr
}

func (s *recordSource) setErr(err error) {
	s.mu.Lock()
	s.rerr = err
	s.mu.Unlock()
}

// start begins producing lines on the returned channel, closed at the end.
func (s *recordSource) start(ctx context.Context) <-chan sourceLine {
	ch := make(chan sourceLine, 256)
	var key []byte
	if s.o.keySet {
		key = []byte(s.o.key)
	}
	send := func(ln sourceLine) bool {
		select {
		case ch <- ln:
			return true
		case <-s.quit:
		case <-ctx.Done():
		}
		return false
	}
	go func() {
		defer close(ch)
		if s.o.valueSet {
			for i := 0; i < s.o.count; i++ {
				if !send(sourceLine{key: key, value: []byte(s.o.value)}) {
					return
				}
			}
			return
		}
		s.setErr(readLines(s.e.stdin, s.o.maxLine, func(line []byte) bool {
			ln := sourceLine{key: key, value: line}
			if s.o.keySep != "" {
				if k, v, ok := bytes.Cut(line, []byte(s.o.keySep)); ok {
					ln.key, ln.value = k, v
				} else {
					ln.key = nil
				}
			}
			return send(ln)
		}))
	}()
	return ch
}

// readLines calls fn with each line of r (a copy, without its "\n") until
// fn returns false or r ends. A line longer than maxLine is an error.
func readLines(r io.Reader, maxLine int, fn func([]byte) bool) error {
	br := bufio.NewReaderSize(r, min(maxLine+1, 1<<20))
	var long []byte
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			if len(long) > maxLine {
				return fmt.Errorf("line %d is longer than --max-line-bytes %d", n+1, maxLine)
			}
			continue
		}
		line := append(long, chunk...)
		long = nil
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		if len(line) > maxLine {
			return fmt.Errorf("line %d is longer than --max-line-bytes %d", n+1, maxLine)
		}
		if err == nil || len(line) > 0 {
			n++
			cp := make([]byte, len(line))
			copy(cp, line)
			if !fn(cp) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
}
