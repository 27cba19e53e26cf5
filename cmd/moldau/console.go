package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
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
with their lag, and transactions. Click a row for its details.

The console reads the cluster through the Kafka protocol only (Metadata,
DescribeCluster, DescribeQuorum, DescribeLogDirs, ListOffsets, ListGroups,
DescribeGroups, ConsumerGroupDescribe, OffsetFetch, ListTransactions,
DescribeTransactions), once per --interval, and pushes a new snapshot to
the page (server-sent events) when something changed. An API the cluster
does not serve is left out; a failing one keeps its last answer on the
page with the error. With --metrics-url, it also reads those Prometheus
pages (a Moldau broker's moldau.metrics.listener) for bytes and messages
per second.

One poll is bounded by --timeout, at most 5s. The page needs no network
beyond the console: its files are in the binary. /api/snapshot answers
the current snapshot as JSON, /api/events streams them. SIGINT or SIGTERM
stops the console.`,
		example: `  moldau console --brokers localhost:9092
  moldau console --listen :8080 --metrics-url http://localhost:9308/metrics
  curl -s localhost:8080/api/snapshot | jq '.topics[].name'`,
		setup: func(fs *pflag.FlagSet) runner {
			listen := fs.String("listen", "localhost:8080", "the HTTP address to serve the console on")
			metrics := fs.StringSlice("metrics-url", nil, "a Prometheus /metrics URL of a Moldau broker to read (repeatable or comma-separated)")
			interval := fs.Duration("interval", time.Second, "the time between two polls of the cluster")
			maxClients := fs.Int("max-clients", 32, "how many browser tabs may follow the console at once")
			return func(ctx context.Context, e *env, args []string) error {
				if *interval < 100*time.Millisecond {
					return usageErrorf(e, "--interval must be at least 100ms")
				}
				seeds := e.client.seeds()
				if len(seeds) == 0 {
					return usageErrorf(e, "--brokers is empty")
				}
				cfg := console.Config{
					Brokers: seeds, Listen: *listen, MetricsURLs: *metrics, Interval: *interval,
					Timeout: min(e.client.timeout, 5*time.Second), DialTimeout: e.client.dialTimeout, MaxClients: *maxClients,
					Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
					Ready: func(addr net.Addr) {
						fmt.Fprintf(e.stderr, "moldau console: serving http://%s (brokers %s); Ctrl-C stops\n", addr, e.client.brokers)
					},
				}
				return console.Serve(ctx, cfg)
			}
		},
	}
}
