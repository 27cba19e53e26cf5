package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// bench upload measures what copying a topic's segments to remote
// storage (KIP-405) costs the broker: it optionally turns tiering on
// (--set remote.storage.enable=true ...), then follows the broker's
// /metrics until the topic's copies stop (the copy-lag gauge at 0 and
// remotecopybytes_total unchanged for --settle), and reports the bytes
// copied, how fast, and the broker's CPU-seconds per GiB copied. The
// broker's CPU counts everything it did meanwhile: run it on a broker
// with no other load.

const uploadBenchHelp = `
Output: a progress line every second on stderr (MiB copied, MiB/s, the
broker's copy lag); at the end a summary on stdout, or with --json one JSON
object with these fields (MiB = 2^20 bytes, GiB = 2^30):
  mode ("upload"), topic, copied_bytes (the topic's
    kafka_server_brokertopicmetrics_remotecopybytes_total over the run),
  copied_segments (remotecopyrequests_total), elapsed_seconds (from the
    start, after --set, to the last copy seen), mib_per_sec,
  broker_cpu_seconds, broker_cpu_cores (process_cpu_seconds_total from the
    start to the last copy seen, and over elapsed_seconds),
  broker_cpu_seconds_per_gib (per GiB copied; null if nothing was),
  copy_lag_bytes (the remotecopylagbytes gauge at the end),
  timed_out (--timeout came first), interrupted.
`

type uploadBenchConfig struct {
	brokers       []string
	commandConfig string
	tlsOpts       []kgo.Opt
	topic         string
	set           map[string]*string
	metricsURL    string
	settle        time.Duration
	timeout       time.Duration
	interval      time.Duration
	json          bool
}

func parseUploadFlags(args []string, stderr io.Writer) (*uploadBenchConfig, error) {
	fs := pflag.NewFlagSet("bench upload", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &uploadBenchConfig{}
	fs.StringSliceVar(&c.brokers, "brokers", []string{"localhost:9092"}, "seed brokers, host:port (comma-separated)")
	fs.StringVar(&c.commandConfig, "command-config", "", commandConfigHelp)
	fs.StringVar(&c.topic, "topic", "moldau-bench", "topic whose copies to follow")
	set := fs.StringArray("set", nil, "topic config key=value to set first (repeatable), e.g. remote.storage.enable=true")
	fs.StringVar(&c.metricsURL, "metrics-url", "", "the partitions' leader's /metrics URL (required; one broker)")
	fs.DurationVar(&c.settle, "settle", 5*time.Second, "done once nothing was copied for this long with no copy lag (more than remote.log.manager.task.interval.ms)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.DurationVar(&c.interval, "scrape-interval", 250*time.Millisecond, "how often to read /metrics")
	fs.BoolVar(&c.json, "json", false, "print the summary as one JSON object on stdout")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: moldau bench upload [flags]\n\n")
		fs.PrintDefaults()
		fmt.Fprint(stderr, uploadBenchHelp)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, nil
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("bench upload: unexpected argument %q", fs.Arg(0))
	}
	var err error
	if c.tlsOpts, err = commandConfigOpts(c.commandConfig); err != nil {
		return nil, err
	}
	if c.set, err = parseConfigPairs("--set", *set); err != nil {
		return nil, err
	}
	switch {
	case c.metricsURL == "":
		return nil, errors.New("--metrics-url: required (the broker's copy meters and CPU)")
	case len(c.brokers) == 0:
		return nil, errors.New("--brokers: need at least one")
	case c.topic == "":
		return nil, errors.New("--topic: must not be empty")
	case c.settle <= 0 || c.timeout <= 0 || c.interval <= 0:
		return nil, errors.New("--settle, --timeout and --scrape-interval: must be positive")
	}
	return c, nil
}

type uploadSummary struct {
	Mode                   string   `json:"mode"`
	Topic                  string   `json:"topic"`
	CopiedBytes            int64    `json:"copied_bytes"`
	CopiedSegments         int64    `json:"copied_segments"`
	ElapsedSeconds         float64  `json:"elapsed_seconds"`
	MiBPerSec              float64  `json:"mib_per_sec"`
	BrokerCPUSeconds       float64  `json:"broker_cpu_seconds"`
	BrokerCPUCores         float64  `json:"broker_cpu_cores"`
	BrokerCPUSecondsPerGiB *float64 `json:"broker_cpu_seconds_per_gib"`
	CopyLagBytes           int64    `json:"copy_lag_bytes"`
	TimedOut               bool     `json:"timed_out"`
	Interrupted            bool     `json:"interrupted"`
}

// runUploadBench sets the configs, then follows the copies until they
// stop, --timeout passes or ctx ends.
func runUploadBench(ctx context.Context, c *uploadBenchConfig, stdout, stderr io.Writer) error {
	first, err := scrapeBroker(ctx, c.metricsURL, c.topic)
	if err != nil {
		return fmt.Errorf("--metrics-url: %w", err)
	}
	if len(c.set) > 0 {
		if err := alterTopicConfigs(ctx, c); err != nil {
			return err
		}
	}
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	last, lastChange, atChange := first, start, first
	t := time.NewTicker(c.interval)
	defer t.Stop()
	nextProgress := start.Add(time.Second)
	for done := false; !done; {
		select {
		case <-runCtx.Done():
			done = true
			continue
		case now := <-t.C:
			s, err := scrapeBroker(runCtx, c.metricsURL, c.topic)
			if err != nil {
				if runCtx.Err() != nil {
					done = true
					continue
				}
				return fmt.Errorf("--metrics-url: %w", err)
			}
			if s.remoteCopyBytes != last.remoteCopyBytes {
				lastChange, atChange = now, s
			}
			last = s
			if now.After(nextProgress) {
				nextProgress = nextProgress.Add(time.Second)
				copied := s.remoteCopyBytes - first.remoteCopyBytes
				fmt.Fprintf(stderr, "%6.0fs %10.2f MiB copied %9.2f MiB/s  copy lag %.2f MiB in %.0f segments\n",
					now.Sub(start).Seconds(), copied/mib, copied/mib/now.Sub(start).Seconds(), s.copyLagBytes/mib, s.copyLagSegments)
			}
			done = s.remoteCopyBytes > first.remoteCopyBytes && s.copyLagSegments == 0 && now.Sub(lastChange) >= c.settle
		}
	}
	sum := &uploadSummary{
		Mode: "upload", Topic: c.topic,
		CopiedBytes:      int64(atChange.remoteCopyBytes - first.remoteCopyBytes),
		CopiedSegments:   int64(atChange.remoteCopyRequests - first.remoteCopyRequests),
		ElapsedSeconds:   lastChange.Sub(start).Seconds(),
		BrokerCPUSeconds: atChange.cpuSeconds - first.cpuSeconds,
		CopyLagBytes:     int64(last.copyLagBytes),
		TimedOut:         ctx.Err() == nil && runCtx.Err() != nil,
		Interrupted:      ctx.Err() != nil,
	}
	if sum.ElapsedSeconds > 0 {
		sum.MiBPerSec = float64(sum.CopiedBytes) / mib / sum.ElapsedSeconds
		sum.BrokerCPUCores = sum.BrokerCPUSeconds / sum.ElapsedSeconds
	}
	if sum.CopiedBytes > 0 {
		perGiB := sum.BrokerCPUSeconds / (float64(sum.CopiedBytes) / gib)
		sum.BrokerCPUSecondsPerGiB = &perGiB
	}
	return sum.write(stdout, c.json)
}

// alterTopicConfigs sets --set on the topic.
func alterTopicConfigs(ctx context.Context, c *uploadBenchConfig) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.brokers...)}, c.tlsOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var alter []kadm.AlterConfig
	for k, v := range c.set {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: v})
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resps, err := kadm.NewClient(cl).AlterTopicConfigs(actx, alter, c.topic)
	if err == nil {
		for _, r := range resps {
			if r.Err != nil {
				err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("--set on topic %s: %w", c.topic, err)
	}
	return nil
}

func (s *uploadSummary) write(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "moldau bench upload: topic %s", s.Topic)
	switch {
	case s.Interrupted:
		b.WriteString(" (interrupted)")
	case s.TimedOut:
		b.WriteString(" (timed out)")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  copied      %.2f MiB in %d segments, %.2f MiB still to copy\n", float64(s.CopiedBytes)/mib, s.CopiedSegments, float64(s.CopyLagBytes)/mib)
	fmt.Fprintf(&b, "  elapsed     %.3f s\n", s.ElapsedSeconds)
	fmt.Fprintf(&b, "  throughput  %.2f MiB/s\n", s.MiBPerSec)
	fmt.Fprintf(&b, "  broker CPU  %.2f s (%.2f cores)", s.BrokerCPUSeconds, s.BrokerCPUCores)
	if s.BrokerCPUSecondsPerGiB != nil {
		fmt.Fprintf(&b, ", %.2f CPU-seconds per GiB copied", *s.BrokerCPUSecondsPerGiB)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
