package dev

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/cmd/moldau/console"
)

//go:embed web
var webFS embed.FS

// Config is how `moldau dev` runs.
type Config struct {
	Nodes int
	// Dir is the data folder; empty: a temporary one, removed on exit.
	Dir string
	// Exe is the moldau binary the nodes run.
	Exe string
	// Listen is the console's HTTP address.
	Listen string
	// Overrides are Kafka properties every node gets.
	Overrides []string
	// Topic is created at start with Partitions, ReplicationFactor and
	// TopicConfigs (min.insync.replicas, ...); empty: none.
	Topic             string
	Partitions        int32
	ReplicationFactor int16
	TopicConfigs      map[string]string
	// Producers and Consumers start once the topic exists.
	Producers []ProducerConfig
	Consumers []ConsumerConfig
	// CheckInterval is how often the logs are read back to check the
	// delivery counters (default 3s; negative: only on request).
	CheckInterval time.Duration
	// Out gets the lines a person reads (ports, URL); Logger the rest.
	Out    io.Writer
	Logger *slog.Logger
	// Ready is called with the console's address once it serves.
	Ready func(addr net.Addr)
}

// Dev is a running dev cluster with its traffic, ledger and events.
type Dev struct {
	cfg     Config
	Cluster *Cluster
	Traffic *Traffic
	Ledger  *Ledger
	Events  *EventLog
	// Recorder keeps the console's snapshots over time, for replay.
	Recorder *console.Recorder
	// observer reaches the nodes directly (not through the proxies):
	// the controller lookup and the log checks.
	observer *kgo.Client
	checkMu  sync.Mutex
}

// Serve starts the cluster and serves the console with the dev panel and
// API until ctx is done; then it stops the traffic and the nodes, and
// removes a temporary data folder.
func Serve(ctx context.Context, cfg Config) (err error) {
	if cfg.Nodes < 1 {
		return errors.New("--nodes must be at least 1")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.CheckInterval == 0 {
		cfg.CheckInterval = 3 * time.Second
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "moldau-dev-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
		fmt.Fprintf(cfg.Out, "moldau dev: data in %s (removed on exit; --dir keeps it)\n", dir)
	} else {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Out, "moldau dev: data in %s (kept)\n", cfg.Dir)
	}
	d := &Dev{cfg: cfg, Events: &EventLog{}, Ledger: newLedger(), Recorder: console.NewRecorder()}
	d.Cluster, err = newCluster(ClusterConfig{Nodes: cfg.Nodes, Dir: cfg.Dir, Exe: cfg.Exe, Overrides: cfg.Overrides}, d.Events)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.Cluster.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	for _, n := range d.Cluster.Nodes {
		if err := d.Cluster.Start(n.ID); err != nil {
			return err
		}
		d.Events.Add("node", fmt.Sprintf("node %d started", n.ID), map[string]any{"node": n.ID})
	}
	for _, s := range d.Cluster.States() {
		fmt.Fprintf(cfg.Out, "  node %d: clients %s (its own listener 127.0.0.1:%d), peers %s, controller %s, log %s/node-%d.log\n",
			s.ID, s.ClientAddr, s.ClientPort, s.ReplicationAddr, s.ControllerAddr, cfg.Dir, s.ID)
	}
	d.observer, err = kgo.NewClient(kgo.SeedBrokers(d.Cluster.Seeds()...), kgo.Dialer(d.Cluster.DirectDialer()),
		kgo.ClientID("moldau-dev-observer"), kgo.RetryTimeout(5*time.Second), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return err
	}
	defer d.observer.Close()
	d.Traffic = newTraffic(d.Cluster.Seeds(), d.Ledger, d.Events)
	defer d.Traffic.Close()

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() { d.setUp(ctx) })
	if cfg.CheckInterval > 0 {
		wg.Go(func() { d.checkLoop(ctx) })
	}
	static, _ := fs.Sub(webFS, "web")
	return console.Serve(ctx, console.Config{
		Brokers: d.Cluster.Seeds(), Listen: cfg.Listen, Interval: 500 * time.Millisecond, Logger: cfg.Logger,
		ClientOpts: []kgo.Opt{kgo.Dialer(d.Cluster.DirectDialer())},
		Scripts:    []string{"/dev/static/panel.js"},
		Mount: func(mux *http.ServeMux, p *console.Poller) {
			mux.Handle("GET /dev/static/", http.StripPrefix("/dev/static/", http.FileServerFS(static)))
			d.routes(mux)
			wg.Go(func() { watch(ctx, p, d.Events) })
			wg.Go(func() { console.Record(ctx, p, d.Recorder) })
		},
		Ready: cfg.Ready,
	})
}

// setUp waits for the cluster, creates the topic and starts the traffic.
func (d *Dev) setUp(ctx context.Context) {
	adm := kadm.NewClient(d.observer)
	// Every node must list every broker. A client of its own per try:
	// a kgo client whose first Metadata came from a node that had just
	// started has been seen to be answered with that one broker for
	// tens of seconds.
	err := poll(ctx, 60*time.Second, func() error {
		for _, seed := range d.Cluster.Seeds() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.Dialer(d.Cluster.DirectDialer()), kgo.RetryTimeout(2*time.Second))
			if err != nil {
				return err
			}
			m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			cl.Close()
			if err != nil {
				return err
			}
			if len(m.Brokers) < d.cfg.Nodes {
				return fmt.Errorf("%s lists %d of %d brokers", seed, len(m.Brokers), d.cfg.Nodes)
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(d.cfg.Out, "moldau dev: the cluster did not come up: %v (see the nodes' logs)\n", err)
		}
		return
	}
	fmt.Fprintf(d.cfg.Out, "moldau dev: %d nodes serving (seed brokers %s)\n", d.cfg.Nodes, joinComma(d.Cluster.Seeds()))
	d.Events.Add("node", "every node serves", nil)
	if d.cfg.Topic != "" {
		rf := min(d.cfg.ReplicationFactor, int16(d.cfg.Nodes))
		cfgs := map[string]*string{}
		for k, v := range d.cfg.TopicConfigs {
			// A min.insync.replicas above the replication factor (one
			// node, say) would refuse every acks=all write.
			if n, err := strconv.Atoi(v); k == "min.insync.replicas" && err == nil && n > int(rf) {
				v = strconv.Itoa(int(rf))
				fmt.Fprintf(d.cfg.Out, "moldau dev: min.insync.replicas %d lowered to the replication factor, %d\n", n, rf)
			}
			cfgs[k] = &v
		}
		if _, err := adm.CreateTopic(ctx, d.cfg.Partitions, rf, cfgs, d.cfg.Topic); err != nil {
			fmt.Fprintf(d.cfg.Out, "moldau dev: creating topic %s: %v\n", d.cfg.Topic, err)
		} else {
			d.Events.Add("topic", fmt.Sprintf("topic %s created: %d partitions, replication factor %d, %v", d.cfg.Topic, d.cfg.Partitions, rf, d.cfg.TopicConfigs), nil)
		}
	}
	for _, p := range d.cfg.Producers {
		if err := d.Traffic.AddProducer(p); err != nil {
			fmt.Fprintf(d.cfg.Out, "moldau dev: producer: %v\n", err)
		}
	}
	for _, c := range d.cfg.Consumers {
		if err := d.Traffic.AddConsumer(c); err != nil {
			fmt.Fprintf(d.cfg.Out, "moldau dev: consumer: %v\n", err)
		}
	}
}

func (d *Dev) checkLoop(ctx context.Context) {
	t := time.NewTicker(d.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.check(ctx)
		}
	}
}

// check runs one check of the delivery counters against the logs.
func (d *Dev) check(ctx context.Context) error {
	d.checkMu.Lock()
	defer d.checkMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return d.Ledger.Check(ctx, d.observer, d.Events)
}

// KillController kills (SIGKILL) the active controller and returns its id.
func (d *Dev) KillController(ctx context.Context) (int32, error) {
	req := kadm.NewClient(d.observer)
	m, err := req.BrokerMetadata(ctx)
	if err != nil {
		return -1, err
	}
	if m.Controller < 0 {
		return -1, errors.New("no active controller")
	}
	return m.Controller, d.Cluster.Kill(m.Controller)
}

func poll(ctx context.Context, timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// ---- the HTTP API ----

// State is GET /api/dev/state.
type State struct {
	Nodes    []NodeState `json:"nodes"`
	Counters Counters    `json:"counters"`
}

func (d *Dev) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/dev/state", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, State{Nodes: d.Cluster.States(), Counters: d.Ledger.Counters()})
	})
	mux.HandleFunc("GET /api/dev/counters", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, d.Ledger.Counters())
	})
	mux.HandleFunc("GET /api/dev/events", func(w http.ResponseWriter, r *http.Request) {
		since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
		evs, dropped := d.Events.Since(since)
		if evs == nil {
			evs = []Event{}
		}
		if r.URL.Query().Get("download") != "" {
			w.Header().Set("Content-Disposition", `attachment; filename="moldau-dev-events.json"`)
		}
		writeJSON(w, http.StatusOK, map[string]any{"events": evs, "dropped": dropped})
	})
	mux.HandleFunc("GET /api/dev/run", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("download") != "" {
			w.Header().Set("Content-Disposition", `attachment; filename="moldau-dev-run.json"`)
		}
		writeJSON(w, http.StatusOK, d.run())
	})
	post := func(path string, fn func(r *http.Request) (any, error)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			// A JSON body only: a form posted by another site cannot
			// reach the API without a CORS preflight, which it fails.
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "Content-Type must be application/json"})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			v, err := fn(r)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			if v == nil {
				v = map[string]bool{"ok": true}
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	node := func(r *http.Request) (int32, error) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			return 0, fmt.Errorf("node %q: not a number", r.PathValue("id"))
		}
		if _, err := d.Cluster.node(int32(id)); err != nil {
			return 0, err
		}
		return int32(id), nil
	}
	post("/api/dev/nodes/{id}/{action}", func(r *http.Request) (any, error) {
		id, err := node(r)
		if err != nil {
			return nil, err
		}
		action := r.PathValue("action")
		switch action {
		case "kill":
			err = d.Cluster.Kill(id)
		case "stop":
			err = d.Cluster.Stop(id)
		case "start":
			err = d.Cluster.Start(id)
		case "restart":
			err = d.Cluster.Restart(id)
		case "cut-peers":
			d.Cluster.Net.Cut(id, false)
		case "cut-clients":
			d.Cluster.Net.Cut(id, true)
		case "heal":
			d.Cluster.Net.Heal(id)
		default:
			return nil, fmt.Errorf("unknown action %q: kill, stop, start, restart, cut-peers, cut-clients or heal", action)
		}
		if err != nil {
			return nil, err
		}
		d.Events.Add("fault", fmt.Sprintf("node %d: %s", id, action), map[string]any{"node": id, "action": action})
		return nil, nil
	})
	post("/api/dev/nodes/{id}/slow", func(r *http.Request) (any, error) {
		id, err := node(r)
		if err != nil {
			return nil, err
		}
		var req struct {
			DelayMs int64 `json:"delay_ms"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return nil, err
		}
		delay := time.Duration(req.DelayMs) * time.Millisecond
		if err := d.Cluster.SlowDisk(r.Context(), id, delay); err != nil {
			return nil, err
		}
		text := fmt.Sprintf("node %d: disk slowed by %v a write and fsync", id, delay)
		if delay == 0 {
			text = fmt.Sprintf("node %d: disk back to normal", id)
		}
		d.Events.Add("fault", text, map[string]any{"node": id, "action": "slow", "delay_ms": req.DelayMs})
		return nil, nil
	})
	post("/api/dev/controller/kill", func(r *http.Request) (any, error) {
		id, err := d.KillController(r.Context())
		if err != nil {
			return nil, err
		}
		d.Events.Add("fault", fmt.Sprintf("active controller (node %d): kill", id), map[string]any{"node": id, "action": "kill"})
		return map[string]int32{"killed": id}, nil
	})
	post("/api/dev/lose", func(r *http.Request) (any, error) {
		var req struct {
			Link
			Response bool `json:"response"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return nil, err
		}
		if _, err := d.Cluster.node(req.To); err != nil {
			return nil, err
		}
		if req.From != Clients {
			if _, err := d.Cluster.node(req.From); err != nil {
				return nil, err
			}
		}
		d.Cluster.Net.LoseNext(req.Link, req.Response)
		what := "request"
		if req.Response {
			what = "response"
		}
		d.Events.Add("fault", fmt.Sprintf("the next %s on %s will be lost", what, req.Link), map[string]any{"link": req.Link, "response": req.Response})
		return nil, nil
	})
	post("/api/dev/producers", func(r *http.Request) (any, error) {
		var cfg ProducerConfig
		if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil {
			return nil, err
		}
		return nil, d.Traffic.AddProducer(cfg)
	})
	post("/api/dev/producers/{name}/stop", func(r *http.Request) (any, error) {
		return nil, d.Traffic.StopProducer(r.PathValue("name"))
	})
	post("/api/dev/producers/{name}/wait", func(r *http.Request) (any, error) {
		ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
		defer cancel()
		return nil, d.Traffic.WaitProducer(ctx, r.PathValue("name"))
	})
	post("/api/dev/consumers", func(r *http.Request) (any, error) {
		var cfg ConsumerConfig
		if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil {
			return nil, err
		}
		return nil, d.Traffic.AddConsumer(cfg)
	})
	post("/api/dev/consumers/{name}/{action}", func(r *http.Request) (any, error) {
		name := r.PathValue("name")
		switch a := r.PathValue("action"); a {
		case "close":
			return nil, d.Traffic.CloseConsumer(name)
		case "crash":
			return nil, d.Traffic.CrashConsumer(name)
		case "restart":
			return nil, d.Traffic.RestartConsumer(name)
		default:
			return nil, fmt.Errorf("unknown action %q: close, crash or restart", a)
		}
	})
	post("/api/dev/check", func(r *http.Request) (any, error) {
		if err := d.check(r.Context()); err != nil {
			return nil, err
		}
		return d.Ledger.Counters(), nil
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// run is the run's export: its event log and the console's frames, for
// `moldau console --replay`.
func (d *Dev) run() console.Run {
	evs, dropped := d.Events.Since(0)
	out := make([]console.RunEvent, len(evs))
	for i, e := range evs {
		out[i] = console.RunEvent(e)
	}
	frames, interval := d.Recorder.Frames()
	if frames == nil {
		frames = []console.Frame{}
	}
	return console.Run{Format: console.RunFormat, Version: console.RunVersion, Events: out, Dropped: dropped,
		FrameIntervalMs: interval.Milliseconds(), Frames: frames}
}
