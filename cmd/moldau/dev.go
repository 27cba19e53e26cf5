package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/moldau/moldau/cmd/moldau/dev"
)

func devCommand() *command {
	return &command{
		name: "dev", args: "[ACTION [NODE...]]", maxArgs: 3, noJSON: true,
		summary: "Run a local cluster to develop against, with faults, traffic and delivery counters.",
		long: `With no ACTION: starts --nodes combined-mode nodes ('moldau serve' child
processes of this binary) with their data in a temporary folder (--dir
keeps it), a TCP proxy in front of each node's client, inter-broker and
controller listeners (the nodes advertise and dial the proxies), prints
the ports, creates --topic, starts the built-in producers and consumers
(franz-go) and serves the console with the dev panel on --listen. SIGINT
or SIGTERM stops everything.

The ledger of the built-in clients is checked against the leaders' logs
(read back with Fetch from the log start) every --check-interval: acknowledged
records lost, duplicates written by retries, records processed twice or
skipped by a group, each with its offsets.

With an ACTION, talks to a running 'moldau dev' at --dev:
  kill N          SIGKILL node N          stop N      SIGTERM node N
  start N         start a stopped node    restart N   SIGTERM, then start
  kill-controller SIGKILL the active controller
  cut N           cut node N off (--from peers or clients); heal N lifts it
  slow N          delay every write and fsync of node N's partition logs
                  by --delay (0 restores the disk)
  lose FROM TO    lose the next request (--response: response) on the
                  link from FROM (a node, or 0 for the clients) to node TO
  rebuild         replace the cluster with a new, empty one built from this
                  command's flags (--nodes, --partitions, --acks, ...) as
                  'moldau dev' would start it; the counters start again
  check           check the counters against the logs now and print them
  state           print the nodes and counters (JSON)
  events          print the run's export (JSON): the event log and the
                  console's snapshots over time, for 'moldau console --replay'`,
		example: `  moldau dev                                   # three nodes, console on localhost:8080
  moldau dev --nodes 5 --dir ./dev-data --acks 1 --unclean-leader-election
  moldau dev kill 2 --dev localhost:8080
  moldau dev cut 3 --from peers; moldau dev heal 3
  moldau dev lose 0 1 --response
  moldau dev slow 2 --delay 200ms; moldau dev slow 2 --delay 0
  moldau dev rebuild --nodes 5 --partitions 6 --acks 1 --min-insync-replicas 1
  moldau dev events > run.json`,
		setup: func(fs *pflag.FlagSet) runner {
			nodes := fs.Int("nodes", 3, "how many nodes (brokers and controllers in one process each)")
			dir := fs.String("dir", "", "the data folder, kept on exit (default: a temporary folder, removed on exit)")
			listen := fs.String("listen", "localhost:8080", "the HTTP address of the console, the dev panel and its API")
			noOpen := fs.Bool("no-open", false, "do not open the console in a browser")
			overrides := fs.StringArray("override", nil, "a Kafka property every node gets, key=value (repeatable)")
			topic := fs.String("topic", "dev", "the topic created at start and used by the built-in clients")
			partitions := fs.Int32("partitions", 3, "the topic's partitions")
			rf := fs.Int16("replication-factor", 3, "the topic's replication factor (at most --nodes)")
			minISR := fs.Int("min-insync-replicas", 2, "the topic's min.insync.replicas")
			unclean := fs.Bool("unclean-leader-election", false, "the topic's unclean.leader.election.enable")
			topicCfg := fs.StringArray("topic-config", nil, "another topic config, key=value (retention.ms, cleanup.policy=compact, ...)")
			producers := fs.Int("producers", 1, "built-in producers to start")
			rate := fs.Float64("rate", 10, "records per second per producer")
			burst := fs.Int("burst", 1, "records sent at once (a burst every burst/rate seconds)")
			keys := fs.Int("keys", 10, "distinct keys (0: no keys)")
			acks := fs.String("acks", "all", "the producers' acks: all, 1 or 0")
			idempotent := fs.Bool("idempotent", true, "idempotent producers (needs acks=all)")
			txn := fs.Bool("transactional", false, "produce in transactions")
			txnRecords := fs.Int("txn-records", 10, "records per transaction")
			abortEvery := fs.Int("abort-every", 0, "abort every Nth transaction (0: never)")
			tombstones := fs.Int("tombstone-every", 0, "every Nth record is a tombstone (0: none)")
			linger := fs.Duration("linger", 0, "how long the producers batch records")
			consumers := fs.Int("consumers", 1, "built-in group consumers to start")
			group := fs.String("group", "dev-group", "the consumers' group")
			protocol := fs.String("group-protocol", "classic", "classic or consumer (KIP-848)")
			assignor := fs.String("assignor", "", "classic: cooperative-sticky, sticky, range, roundrobin; consumer: uniform, range")
			isolation := fs.String("isolation", "read_committed", "the consumers' isolation level: read_committed or read_uncommitted")
			commit := fs.Duration("commit-interval", time.Second, "the consumers' auto-commit interval")
			checkEvery := fs.Duration("check-interval", 3*time.Second, "how often the counters are checked against the logs (0: on request only)")
			devAddr := fs.String("dev", "localhost:8080", "for an ACTION: the running 'moldau dev' (its --listen)")
			from := fs.String("from", "peers", "for cut: peers or clients")
			response := fs.Bool("response", false, "for lose: lose the next response instead of the next request")
			delay := fs.Duration("delay", 200*time.Millisecond, "for slow: the delay of each write and fsync of the node's partition logs (0: none)")
			// settings are the cluster and traffic the flags describe.
			settings := func(e *env) (dev.Settings, error) {
				if *nodes < 1 || *nodes > dev.MaxNodes {
					return dev.Settings{}, usageErrorf(e, "--nodes must be 1 to %d", dev.MaxNodes)
				}
				tc := map[string]string{"min.insync.replicas": strconv.Itoa(*minISR), "unclean.leader.election.enable": strconv.FormatBool(*unclean)}
				for _, kv := range *topicCfg {
					k, v, ok := strings.Cut(kv, "=")
					if !ok {
						return dev.Settings{}, usageErrorf(e, "--topic-config %q: want key=value", kv)
					}
					tc[k] = v
				}
				st := dev.Settings{Nodes: *nodes, Topic: *topic, Partitions: *partitions, ReplicationFactor: *rf, TopicConfigs: tc}
				idem := *idempotent && (*acks == "all" || *acks == "-1")
				for i := range *producers {
					st.Producers = append(st.Producers, dev.ProducerConfig{Name: fmt.Sprintf("p%d", i+1), Topic: *topic, Rate: *rate, Burst: *burst,
						Keys: *keys, Acks: *acks, Idempotent: &idem, Transactional: *txn, TxnRecords: *txnRecords, AbortEvery: *abortEvery,
						TombstoneEvery: *tombstones, LingerMs: int(*linger / time.Millisecond)})
				}
				for i := range *consumers {
					st.Consumers = append(st.Consumers, dev.ConsumerConfig{Name: fmt.Sprintf("c%d", i+1), Group: *group, Topic: *topic,
						Protocol: *protocol, Assignor: *assignor, Isolation: *isolation, CommitIntervalMs: int(*commit / time.Millisecond)})
				}
				return st, nil
			}
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					var body any
					if args[0] == "rebuild" {
						st, err := settings(e)
						if err != nil {
							return err
						}
						body = st
					}
					return devAction(ctx, e, *devAddr, args, *from, *response, *delay, body)
				}
				st, err := settings(e)
				if err != nil {
					return err
				}
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				cfg := dev.Config{
					Settings: st, Dir: *dir, Exe: exe, Listen: *listen, Overrides: *overrides,
					CheckInterval: *checkEvery, Out: e.stderr,
					// Info: the console's actions, one line each.
					Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
				}
				if *checkEvery == 0 {
					cfg.CheckInterval = -1
				}
				cfg.Ready = func(addr net.Addr) {
					url := "http://" + addr.String()
					fmt.Fprintf(e.stderr, "moldau dev: console and dev panel on %s (API %s/api/dev/state); Ctrl-C stops\n", url, url)
					if !*noOpen {
						openBrowser(url)
					}
				}
				return dev.Serve(ctx, cfg)
			}
		},
	}
}

// openBrowser opens url with the desktop's opener, if there is one.
func openBrowser(url string) {
	for _, opener := range []string{"xdg-open", "open"} {
		if p, err := exec.LookPath(opener); err == nil {
			cmd := exec.Command(p, url)
			if cmd.Start() == nil {
				go cmd.Wait()
			}
			return
		}
	}
}

// devAction runs an ACTION against a running `moldau dev`.
func devAction(ctx context.Context, e *env, addr string, args []string, from string, response bool, delay time.Duration, body any) error {
	base := "http://" + addr
	if strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://") {
		base = addr
	}
	need := func(n int) error {
		if len(args) != n+1 {
			return usageErrorf(e, "%s takes %d argument(s)", args[0], n)
		}
		for _, a := range args[1:] {
			if _, err := strconv.Atoi(a); err != nil {
				return usageErrorf(e, "%s: %q is not a node number", args[0], a)
			}
		}
		return nil
	}
	var method, path string
	switch a := args[0]; a {
	case "kill", "stop", "start", "restart", "heal":
		if err := need(1); err != nil {
			return err
		}
		method, path = "POST", "/api/dev/nodes/"+args[1]+"/"+a
	case "cut":
		if err := need(1); err != nil {
			return err
		}
		if from != "peers" && from != "clients" {
			return usageErrorf(e, "--from must be peers or clients")
		}
		method, path = "POST", "/api/dev/nodes/"+args[1]+"/cut-"+from
	case "slow":
		if err := need(1); err != nil {
			return err
		}
		if delay < 0 {
			return usageErrorf(e, "--delay must not be negative")
		}
		method, path, body = "POST", "/api/dev/nodes/"+args[1]+"/slow", map[string]any{"delay_ms": delay.Milliseconds()}
	case "kill-controller":
		if err := need(0); err != nil {
			return err
		}
		method, path = "POST", "/api/dev/controller/kill"
	case "lose":
		if err := need(2); err != nil {
			return err
		}
		f, _ := strconv.Atoi(args[1])
		t, _ := strconv.Atoi(args[2])
		method, path, body = "POST", "/api/dev/lose", map[string]any{"from": f, "to": t, "response": response}
	case "rebuild":
		if err := need(0); err != nil {
			return err
		}
		method, path = "POST", "/api/dev/rebuild"
	case "check":
		method, path = "POST", "/api/dev/check"
	case "state":
		method, path = "GET", "/api/dev/state"
	case "events":
		method, path = "GET", "/api/dev/run"
	default:
		return usageErrorf(e, "unknown action %q", a)
	}
	var rd io.Reader
	if method == "POST" {
		b, _ := json.Marshal(body)
		if body == nil {
			b = []byte("{}")
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("is 'moldau dev' running at %s? %w", addr, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var m struct{ Error string }
		if json.Unmarshal(out, &m) == nil && m.Error != "" {
			return fmt.Errorf("%s: %s", args[0], m.Error)
		}
		return fmt.Errorf("%s: %s", args[0], resp.Status)
	}
	if method == "GET" || args[0] == "check" || args[0] == "kill-controller" {
		e.stdout.Write(out)
	}
	return nil
}
