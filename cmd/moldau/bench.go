package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
)

// bench is `moldau bench MODE [flags]`: a load generator in the style of
// kafka-producer-perf-test and rpk. Ctrl-C (or SIGTERM) ends a run early;
// the summary is still printed.
func bench(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runBench(ctx, args, os.Stdout, os.Stderr)
}

const benchUsage = `Usage: moldau bench MODE [flags]

Modes:
  produce   produce records as fast as possible (or at --rate); latency is
            from each Produce call to its acknowledgement
  consume   read the topic from its start to the end offsets listed when the
            run starts (or --records, or --duration); latency is the time
            each poll waited for data. Run 'bench produce --delete-topic=false'
            first to fill the topic.
  e2e       producers and consumers at once; latency is from send to receipt,
            from an 8-byte timestamp at the start of each record value
  upload    tiered storage: follow a broker's copies of a topic's segments to
            remote storage (after --set remote.storage.enable=true, say)
            until they stop; reports MiB/s and broker CPU-seconds per GiB
            copied
  floor     the cost of moving bytes on this machine with no Kafka at all:
            length-prefixed frames over loopback TCP into a file, acknowledged
            per frame; reports CPU-seconds per GiB

Run 'moldau bench MODE --help' for a mode's flags and JSON fields.
`

// runBench runs one bench command with its own output writers, so tests run
// it in-process. Cancelling ctx ends the run early, as Ctrl-C does.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, benchUsage)
		return errors.New("bench: missing mode (produce, consume, e2e, upload or floor)")
	}
	mode, args := args[0], args[1:]
	switch mode {
	case "produce", "consume", "e2e":
		cfg, err := parseKafkaBenchFlags(mode, args, stderr)
		if err != nil || cfg == nil {
			return err
		}
		return runKafkaBench(ctx, cfg, stdout, stderr)
	case "upload":
		cfg, err := parseUploadFlags(args, stderr)
		if err != nil || cfg == nil {
			return err
		}
		return runUploadBench(ctx, cfg, stdout, stderr)
	case "floor":
		cfg, err := parseFloorFlags(args, stderr)
		if err != nil || cfg == nil {
			return err
		}
		return runFloor(ctx, cfg, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stderr, benchUsage)
		return nil
	default:
		fmt.Fprint(stderr, benchUsage)
		return fmt.Errorf("bench: unknown mode %q", mode)
	}
}

// kafkaBenchConfig is the parsed flags of produce, consume and e2e.
type kafkaBenchConfig struct {
	mode              string
	brokers           []string
	commandConfig     string    // --command-config: Kafka client properties (TLS, SASL)
	tlsOpts           []kgo.Opt // from commandConfig
	topic             string
	partitions        int32
	replicationFactor int16
	recordSize        int
	acks              string
	compression       string
	rate              float64
	duration          time.Duration
	records           int64
	linger            time.Duration
	lingerSet         bool
	maxBatchBytes     int32
	producers         int
	consumers         int
	txnRecords        int    // records per transaction; 0: not transactional
	group             string // consume: a classic consumer group's consumers instead of assigned partitions
	shareGroup        string // consume: a share group's consumers, accepting every record
	createTopic       bool
	topicConfigs      map[string]*string // --topic-config, for a topic the run creates
	deleteTopic       bool
	deleteTopicSet    bool
	json              bool
	metricsURL        string
	drainTimeout      time.Duration
}

const kafkaBenchJSONHelp = `
Output: a progress line every second on stderr (records/s, MiB/s, p50 and
p99 latency of that second, errors); at the end a summary on stdout, or with
--json one JSON object with these fields (MiB = 2^20 bytes, GiB = 2^30):
  mode, topic, partitions, record_size, acks, compression, producers,
  consumers, target_rate (records/s, 0 = unlimited),
  records (acknowledged for produce, received for consume and e2e),
  bytes (record values of those records), elapsed_seconds, records_per_sec,
  mib_per_sec,
  latency_kind ("produce": Produce call to acknowledgement; "poll": time a
    consumer's poll waited for data; "e2e": send to receipt),
  latency_ms {count, mean, p50, p95, p99, p999, max} (milliseconds, to the
    microsecond; histogram quantiles within 0.4%, max exact),
  ack_latency_ms (e2e only, else null: the producers' Produce-to-ack latency),
  transaction_records, transactions (produce with --transaction-records:
    records per transaction and transactions committed; records counts
    what was acknowledged, committed or not),
  produced (e2e: records acknowledged to the producers, else 0),
  lost (e2e: produced but not received before the drain timeout),
  errors, error_counts [{error, count}] (most frequent first, at most 5),
  aborted (records cut off by Ctrl-C, not errors), interrupted,
  client_cpu_seconds (this process, user+system),
  broker_cpu_seconds, broker_cpu_cores, broker_cpu_seconds_per_gib
    (--metrics-url only, else null: the broker's process_cpu_seconds_total
    over the run, divided by the elapsed time and by the GiB in "bytes"),
  broker_remote_copy_bytes, broker_remote_fetch_bytes (--metrics-url only,
    else null: the topic's bytes the broker copied to and read from remote
    storage over the run, from kafka_server_brokertopicmetrics_
    remotecopybytes_total and remotefetchbytes_total; 0 without tiering).
`

// parseKafkaBenchFlags parses produce, consume and e2e flags; it returns
// nil, nil after --help.
func parseKafkaBenchFlags(mode string, args []string, stderr io.Writer) (*kafkaBenchConfig, error) {
	fs := pflag.NewFlagSet("bench "+mode, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &kafkaBenchConfig{mode: mode}
	fs.StringSliceVar(&c.brokers, "brokers", []string{"localhost:9092"}, "seed brokers, host:port (comma-separated)")
	fs.StringVar(&c.commandConfig, "command-config", "", commandConfigHelp)
	fs.StringVar(&c.topic, "topic", "moldau-bench", "topic")
	fs.Int32Var(&c.partitions, "partitions", 8, "partitions when creating the topic")
	fs.Int16Var(&c.replicationFactor, "replication-factor", 1, "replication factor when creating the topic")
	fs.IntVar(&c.recordSize, "record-size", 1024, "bytes in each record value (e2e: at least 8)")
	fs.StringVar(&c.acks, "acks", "all", "producer acks: all, 1 or 0 (all: idempotent producer; 1, 0: not idempotent)")
	fs.StringVar(&c.compression, "compression", "none", "producer compression: none, gzip, snappy, lz4, zstd")
	fs.Float64Var(&c.rate, "rate", 0, "target records/s across all producers, paced evenly (0: unlimited)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run (whichever of --duration and --records comes first)")
	fs.Int64Var(&c.records, "records", 0, "records to produce or consume in all (0: no limit)")
	fs.DurationVar(&c.linger, "linger", 0, "producer linger (kgo.ProducerLinger); unset: kgo's default (10ms)")
	fs.Int32Var(&c.maxBatchBytes, "max-batch-bytes", 1<<20, "largest record batch a producer builds (kgo.ProducerBatchMaxBytes)")
	fs.IntVar(&c.producers, "producers", 1, "producer clients")
	fs.IntVar(&c.txnRecords, "transaction-records", 0, "produce: commit a transaction every N records per producer (transactional producers, ids moldau-bench-PID-N); 0: idempotent or plain")
	fs.IntVar(&c.consumers, "consumers", 1, "consumer clients, splitting the partitions between them")
	fs.StringVar(&c.group, "group", "", "consume: the consumers join this consumer group (classic protocol) and read the topic from its start")
	fs.StringVar(&c.shareGroup, "share-group", "", "consume: the consumers join this share group (KIP-932, share.auto.offset.reset=earliest) and accept every record")
	fs.BoolVar(&c.createTopic, "create-topic", true, "create the topic if it is missing (produce, e2e)")
	topicConfigs := fs.StringArray("topic-config", nil, "topic config key=value of a topic the run creates (repeatable), e.g. remote.storage.enable=true")
	fs.BoolVar(&c.deleteTopic, "delete-topic", false, "delete the topic at the end (default: only if this run created it)")
	fs.BoolVar(&c.json, "json", false, "print the summary as one JSON object on stdout")
	fs.StringVar(&c.metricsURL, "metrics-url", "", "broker /metrics URL: report the broker's CPU-seconds and CPU-seconds per GiB")
	fs.DurationVar(&c.drainTimeout, "drain-timeout", 10*time.Second, "e2e: how long consumers wait for the last records after producers stop")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: moldau bench %s [flags]\n\n", mode)
		fs.PrintDefaults()
		fmt.Fprint(stderr, kafkaBenchJSONHelp)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("bench %s: unexpected argument %q", mode, fs.Arg(0))
	}
	c.lingerSet = fs.Changed("linger")
	var err error
	if c.tlsOpts, err = commandConfigOpts(c.commandConfig); err != nil {
		return nil, err
	}
	c.deleteTopicSet = fs.Changed("delete-topic")
	if c.topicConfigs, err = parseConfigPairs("--topic-config", *topicConfigs); err != nil {
		return nil, err
	}
	switch {
	case len(c.brokers) == 0:
		return nil, errors.New("--brokers: need at least one")
	case c.topic == "":
		return nil, errors.New("--topic: must not be empty")
	case c.partitions < 1:
		return nil, errors.New("--partitions: must be at least 1")
	case c.replicationFactor < 1:
		return nil, errors.New("--replication-factor: must be at least 1")
	case c.recordSize < 0:
		return nil, errors.New("--record-size: must not be negative")
	case mode == "e2e" && c.recordSize < 8:
		return nil, errors.New("--record-size: e2e needs at least 8 bytes for the send timestamp")
	case c.acks != "all" && c.acks != "1" && c.acks != "0" && c.acks != "-1":
		return nil, fmt.Errorf("--acks %q: expected all, 1 or 0", c.acks)
	case c.rate < 0:
		return nil, errors.New("--rate: must not be negative")
	case c.duration <= 0:
		return nil, errors.New("--duration: must be positive")
	case c.records < 0:
		return nil, errors.New("--records: must not be negative")
	case c.linger < 0:
		return nil, errors.New("--linger: must not be negative")
	case c.maxBatchBytes < 1:
		return nil, errors.New("--max-batch-bytes: must be positive")
	case c.producers < 1 || c.consumers < 1:
		return nil, errors.New("--producers and --consumers: must be at least 1")
	case c.txnRecords < 0:
		return nil, errors.New("--transaction-records: must not be negative")
	case c.txnRecords > 0 && mode != "produce":
		return nil, errors.New("--transaction-records: only for bench produce")
	case c.txnRecords > 0 && c.acks != "all" && c.acks != "-1":
		return nil, errors.New("--transaction-records: transactions need --acks all")
	case (c.group != "" || c.shareGroup != "") && mode != "consume":
		return nil, errors.New("--group and --share-group: only for bench consume")
	case c.group != "" && c.shareGroup != "":
		return nil, errors.New("--group and --share-group: one or the other")
	}
	if c.acks == "-1" {
		c.acks = "all"
	}
	if _, err := compressionCodec(c.compression); err != nil {
		return nil, err
	}
	return c, nil
}

// latencySummary is a latency distribution in milliseconds, to the
// microsecond.
type latencySummary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

func summarizeLatency(h *histogram) *latencySummary {
	q := func(p float64) float64 { return ms(time.Duration(h.Quantile(p))) }
	return &latencySummary{
		Count: h.Count(),
		Mean:  ms(time.Duration(h.Mean())),
		P50:   q(0.50), P95: q(0.95), P99: q(0.99), P999: q(0.999),
		Max: ms(time.Duration(h.Max())),
	}
}

type errorCount struct {
	Error string `json:"error"`
	Count int64  `json:"count"`
}

// benchSummary is the result of produce, consume and e2e; its JSON field
// names are documented in kafkaBenchJSONHelp and are stable.
type benchSummary struct {
	Mode                   string          `json:"mode"`
	Topic                  string          `json:"topic"`
	Partitions             int             `json:"partitions"`
	RecordSize             int             `json:"record_size"`
	Acks                   string          `json:"acks"`
	Compression            string          `json:"compression"`
	Producers              int             `json:"producers"`
	Consumers              int             `json:"consumers"`
	TargetRate             float64         `json:"target_rate"`
	Records                int64           `json:"records"`
	Bytes                  int64           `json:"bytes"`
	ElapsedSeconds         float64         `json:"elapsed_seconds"`
	RecordsPerSec          float64         `json:"records_per_sec"`
	MiBPerSec              float64         `json:"mib_per_sec"`
	LatencyKind            string          `json:"latency_kind"`
	Latency                *latencySummary `json:"latency_ms"`
	AckLatency             *latencySummary `json:"ack_latency_ms"`
	TransactionRecords     int             `json:"transaction_records"`
	Transactions           int64           `json:"transactions"`
	Produced               int64           `json:"produced"`
	Lost                   int64           `json:"lost"`
	Errors                 int64           `json:"errors"`
	ErrorCounts            []errorCount    `json:"error_counts"`
	Aborted                int64           `json:"aborted"`
	Interrupted            bool            `json:"interrupted"`
	ClientCPUSeconds       float64         `json:"client_cpu_seconds"`
	BrokerCPUSeconds       *float64        `json:"broker_cpu_seconds"`
	BrokerCPUCores         *float64        `json:"broker_cpu_cores"`
	BrokerCPUSecondsPerGiB *float64        `json:"broker_cpu_seconds_per_gib"`
	RemoteCopyBytes        *int64          `json:"broker_remote_copy_bytes"`
	RemoteFetchBytes       *int64          `json:"broker_remote_fetch_bytes"`
}

// fill sets the totals, rates and latency from stats over elapsed.
func (s *benchSummary) fill(stats *benchStats, elapsed time.Duration) {
	records, bytes, errs, aborted, h, counts := stats.snapshot()
	s.Records, s.Bytes, s.Errors, s.Aborted = records, bytes, errs, aborted
	s.ErrorCounts = counts
	if s.ErrorCounts == nil {
		s.ErrorCounts = []errorCount{}
	}
	s.ElapsedSeconds = elapsed.Seconds()
	if secs := elapsed.Seconds(); secs > 0 {
		s.RecordsPerSec = float64(records) / secs
		s.MiBPerSec = float64(bytes) / secs / mib
	}
	s.Latency = summarizeLatency(h)
}

func (s *benchSummary) write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "moldau bench %s: topic %s (%d partitions), %d-byte records", s.Mode, s.Topic, s.Partitions, s.RecordSize)
	if s.Mode != "consume" {
		fmt.Fprintf(&b, ", acks=%s, compression %s, %d producer(s)", s.Acks, s.Compression, s.Producers)
	}
	if s.Mode != "produce" {
		fmt.Fprintf(&b, ", %d consumer(s)", s.Consumers)
	}
	if s.TargetRate > 0 {
		fmt.Fprintf(&b, ", target %.0f records/s", s.TargetRate)
	}
	if s.Interrupted {
		b.WriteString(" (interrupted)")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  records     %d", s.Records)
	if s.Mode == "e2e" {
		fmt.Fprintf(&b, " received of %d produced (%d lost)", s.Produced, s.Lost)
	}
	fmt.Fprintf(&b, ", %d errors, %d aborted\n", s.Errors, s.Aborted)
	if s.TransactionRecords > 0 {
		fmt.Fprintf(&b, "  committed   %d transactions of up to %d records\n", s.Transactions, s.TransactionRecords)
	}
	fmt.Fprintf(&b, "  bytes       %d (%.2f MiB)\n", s.Bytes, float64(s.Bytes)/mib)
	fmt.Fprintf(&b, "  elapsed     %.3f s\n", s.ElapsedSeconds)
	fmt.Fprintf(&b, "  throughput  %.1f records/s, %.2f MiB/s\n", s.RecordsPerSec, s.MiBPerSec)
	writeLat := func(name string, l *latencySummary) {
		if l == nil {
			return
		}
		fmt.Fprintf(&b, "  %-11s p50 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f ms  (%d samples)\n",
			name, l.P50, l.P95, l.P99, l.P999, l.Max, l.Mean, l.Count)
	}
	writeLat(map[string]string{"produce": "latency", "poll": "poll wait", "e2e": "e2e latency"}[s.LatencyKind], s.Latency)
	writeLat("ack latency", s.AckLatency)
	for _, e := range s.ErrorCounts {
		fmt.Fprintf(&b, "  error       %d × %s\n", e.Count, e.Error)
	}
	fmt.Fprintf(&b, "  client CPU  %.2f s\n", s.ClientCPUSeconds)
	if s.BrokerCPUSeconds != nil {
		fmt.Fprintf(&b, "  broker CPU  %.2f s (%.2f cores)", *s.BrokerCPUSeconds, *s.BrokerCPUCores)
		if s.BrokerCPUSecondsPerGiB != nil {
			fmt.Fprintf(&b, ", %.2f CPU-seconds per GiB", *s.BrokerCPUSecondsPerGiB)
		}
		b.WriteString("\n")
	}
	if s.RemoteCopyBytes != nil && (*s.RemoteCopyBytes != 0 || *s.RemoteFetchBytes != 0) {
		fmt.Fprintf(&b, "  remote      %.2f MiB copied to the store, %.2f MiB read from it\n",
			float64(*s.RemoteCopyBytes)/mib, float64(*s.RemoteFetchBytes)/mib)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// parseConfigPairs reads key=value flags into configs.
func parseConfigPairs(flag string, kvs []string) (map[string]*string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: expected key=value", flag, kv)
		}
		out[k] = &v
	}
	return out, nil
}
