package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/moldau/moldau/cmd/moldau/console"
)

func consoleCommand() *command {
	return &command{
		name: "console", maxArgs: 0, client: true, noJSON: true,
		summary: "Serve a live web console of a cluster (Moldau or Apache Kafka).",
		long: `Serves a web page at --listen showing the cluster live: the controller
quorum, every broker with the replicas it hosts (log start, high
watermark and log end of each), topics and partitions, consumer groups
with their lag, transactions, and the records of __consumer_offsets and
__transaction_state decoded as events (offset commits, group metadata,
transaction states), newest first. Click a row for its details, a
broker's name for its configuration (DescribeConfigs, asked for when the
broker is selected). Producers are boxes left of the broker cards and
consumer groups (with their members) boxes right of them, joined by
wires: produce to the leaders, followers fetching from them, members
fetching from them, groups and transactional producers to their
coordinators, with records per second moving along them (still with
reduced motion; grey to a broker that is down).

Brokers do not serve the metadata log (__cluster_metadata) to clients,
but the quorum's leader does on the controller listener: with
--bootstrap-controller the console follows it from the active controller
with Fetch, as an observer with no replica id (-1, as a consumer), which
the leader counts toward nothing and does not list among DescribeQuorum's
observers. Its records show among the events as kind "metadata" (topics
and partitions created, partition changes with their leader and ISR,
configs, brokers registered, fenced and unfenced, feature levels,
producer id blocks), from at most 200 records before the high watermark,
at most 256 KiB a fetch and one fetch at a time; a metadata snapshot is
skipped, not read. A controller that is not the leader names the leader,
which the next fetch goes to. Sensitive config values are not shown.

The details panel also acts, through the Kafka protocol as Kafka's tools
do: a partition's preferred or (confirmed twice) unclean leader election
(ElectLeaders) and deleting its records before an offset
(DeleteRecords); resetting a group's committed offsets to the earliest,
the latest or a given offset, only while the group is empty, as
kafka-consumer-groups.sh (OffsetCommit), and deleting a group
(DeleteGroups); aborting a hanging transaction's open partitions as
kafka-transactions.sh abort (DescribeProducers, then WriteTxnMarkers to
each leader); setting or deleting a broker's dynamic config
(IncrementalAlterConfigs). Destructive actions ask for a confirmation; a refusal
shows Kafka's error by name. Each action is logged on standard error.
--read-only hides them, and POST /api/act/... answers 403.

The console reads the cluster through the Kafka protocol only (Metadata,
DescribeCluster, DescribeQuorum, DescribeLogDirs, ListOffsets, ListGroups,
DescribeGroups, ConsumerGroupDescribe, OffsetFetch, ListTransactions,
DescribeTransactions, DescribeProducers), once per --interval, and pushes a new snapshot to
the page (server-sent events) when something changed. It follows the two
internal topics with a consumer (Fetch) from 20 records before each
partition's end, at most 1 MiB a fetch, and keeps the newest 500 records.
An API the cluster
does not serve is left out; a failing one keeps its last answer on the
page with the error. With --metrics-url, it also reads those Prometheus
pages (a Moldau broker's moldau.metrics.listener) for bytes and messages
per second, every --metrics-interval (5s: serving its /metrics page
every second would cost a broker with a thousand partitions about 2 % of
a core).

With --replay FILE it polls nothing: it plays back a run exported by
'moldau dev events' (or the dev panel's Export button), the page showing
the cluster as it was, frame after frame, with a timeline to play,
pause, seek and speed up, and the run's event log beside it (click an
event to see the cluster then). Quiet stretches of the run play in at
most two seconds.

One poll is bounded by --timeout, at most 5s. The page needs no network
beyond the console: its files are in the binary. /api/snapshot answers
the current snapshot as JSON, /api/events streams them,
/api/broker/ID/configs answers a broker's configuration, POST
/api/act/KIND/ACTION takes an action (JSON). SIGINT or SIGTERM
stops the console.`,
		example: `  moldau console --brokers localhost:9092
  moldau console --listen :8080 --metrics-url http://localhost:9308/metrics
  moldau console --brokers localhost:9092 --bootstrap-controller localhost:9093
  moldau console --metrics-url 1=http://h1:9308/metrics,2=http://h2:9308/metrics,3=http://h3:9308/metrics
  curl -s localhost:8080/api/snapshot | jq '.topics[].name'
  moldau dev events --dev localhost:8080 > run.json && moldau console --replay run.json --listen localhost:8081`,
		setup: func(fs *pflag.FlagSet) runner {
			listen := fs.String("listen", "localhost:8080", "the HTTP address to serve the console on")
			metrics := fs.StringSlice("metrics-url", nil, "a Prometheus /metrics URL of a Moldau broker to read, ID=URL to tie it to broker ID (its wires then show bytes per second) (repeatable or comma-separated)")
			interval := fs.Duration("interval", time.Second, "the time between two polls of the cluster")
			metricsInterval := fs.Duration("metrics-interval", 5*time.Second, "the time between two reads of the --metrics-url pages")
			maxClients := fs.Int("max-clients", 32, "how many browser tabs may follow the console at once")
			replay := fs.String("replay", "", "play back this run exported by 'moldau dev events' instead of polling a cluster")
			readOnly := fs.Bool("read-only", false, "show the cluster only: no actions in the details panel, and POST /api/act/... answers 403")
			ctrls := fs.String("bootstrap-controller", "", "comma-separated host:port list of controller listeners: follow the metadata log (__cluster_metadata) from the active controller and show its records as events")
			return func(ctx context.Context, e *env, args []string) error {
				if *replay != "" {
					return replayConsole(ctx, e, *replay, *listen, *maxClients)
				}
				if *interval < 100*time.Millisecond {
					return usageErrorf(e, "--interval must be at least 100ms")
				}
				seeds := e.client.seeds()
				if len(seeds) == 0 {
					return usageErrorf(e, "--brokers is empty")
				}
				// --command-config: TLS and SASL, for the brokers and
				// the controllers alike.
				security, err := commandConfigOpts(e.client.commandConfig)
				if err != nil {
					return usageErrorf(e, "%v", err)
				}
				cfg := console.Config{
					ClientOpts: security,
					Brokers:    seeds, Listen: *listen, MetricsURLs: *metrics, MetricsInterval: *metricsInterval, Interval: *interval,
					Timeout: min(e.client.timeout, 5*time.Second), DialTimeout: e.client.dialTimeout, MaxClients: *maxClients,
					ReadOnly: *readOnly, Controllers: hostList(*ctrls),
					// Info: the actions taken from the page, one line each.
					Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
					Ready: func(addr net.Addr) {
						fmt.Fprintf(e.stderr, "moldau console: serving http://%s (brokers %s); Ctrl-C stops\n", addr, e.client.brokers)
					},
				}
				return console.Serve(ctx, cfg)
			}
		},
	}
}

// replayConsole serves the console on a recorded run.
func replayConsole(ctx context.Context, e *env, file, listen string, maxClients int) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	run, err := console.ReadRun(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	cfg := console.Config{
		Listen: listen, MaxClients: maxClients,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Ready: func(addr net.Addr) {
			first, last := time.UnixMilli(run.Frames[0].Time), time.UnixMilli(run.Frames[len(run.Frames)-1].Time)
			fmt.Fprintf(e.stderr, "moldau console: serving http://%s replaying %s (%d frames, %d events, %s to %s); Ctrl-C stops\n",
				addr, file, len(run.Frames), len(run.Events), first.Format(time.DateTime), last.Format(time.TimeOnly))
		},
	}
	return console.ServeReplay(ctx, cfg, run)
}
