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
	// Settings are the cluster's shape, its topic and the traffic it
	// starts with; a rebuild replaces them.
	Settings
	// Dir is the data folder; empty: a temporary one, removed on exit.
	Dir string
	// Exe is the moldau binary the nodes run.
	Exe string
	// Listen is the console's HTTP address.
	Listen string
	// Overrides are Kafka properties every node gets.
	Overrides []string
	// CheckInterval is how often the logs are read back to check the
	// delivery counters (default 3s; negative: only on request).
	CheckInterval time.Duration
	// Out gets the lines a person reads (ports, URL); Logger the rest.
	Out    io.Writer
	Logger *slog.Logger
	// Ready is called with the console's address once it serves.
	Ready func(addr net.Addr)
}

// Settings are what rebuilding the cluster changes (POST
// /api/dev/rebuild, `moldau dev rebuild`): the nodes, the topic created at
// start with Partitions, ReplicationFactor and TopicConfigs
// (min.insync.replicas, unclean.leader.election.enable, retention.ms,
// cleanup.policy, ...; empty Topic: none), and the built-in producers
// and consumers started once it exists.
type Settings struct {
	Nodes             int               `json:"nodes"`
	Topic             string            `json:"topic"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	TopicConfigs      map[string]string `json:"topic_configs"`
	Producers         []ProducerConfig  `json:"producers"`
	Consumers         []ConsumerConfig  `json:"consumers"`
}

// MaxNodes bounds a dev cluster.
const MaxNodes = 9

func (st Settings) validate() error {
	switch {
	case st.Nodes < 1 || st.Nodes > MaxNodes:
		return fmt.Errorf("nodes must be 1 to %d, not %d", MaxNodes, st.Nodes)
	case st.Topic != "" && (st.Partitions < 1 || st.Partitions > 10000):
		return fmt.Errorf("partitions must be 1 to 10000, not %d", st.Partitions)
	case st.Topic != "" && st.ReplicationFactor < 1:
		return fmt.Errorf("the replication factor must be at least 1, not %d", st.ReplicationFactor)
	}
	return nil
}

// Dev is a running dev cluster with its traffic, ledger and events.
type Dev struct {
	cfg    Config
	ctx    context.Context // Serve's: a session lives within it
	Events *EventLog
	// Recorder keeps the console's snapshots over time, for replay.
	Recorder *console.Recorder

	mu      sync.Mutex
	s       *session        // the cluster serving now
	poller  *console.Poller // the console's, once it is mounted
	checkMu sync.Mutex
	// rebuildMu makes rebuilds one at a time.
	rebuildMu sync.Mutex
}

// session is one build of the cluster: its nodes, the clients on it, the
// traffic and the ledger of what the traffic sent. A rebuild closes it
// and starts another; the event log and the recording go on.
type session struct {
	settings Settings
	Cluster  *Cluster
	Traffic  *Traffic
	Ledger   *Ledger
	// observer reaches the nodes directly (not through the proxies):
	// the controller lookup and the log checks.
	observer *kgo.Client
	// console is the console poller's client after a rebuild (the first
	// is console.Serve's own).
	console *kgo.Client
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// cur is the session serving now.
func (d *Dev) cur() *session {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.s
}

// Serve starts the cluster and serves the console with the dev panel and
// API until ctx is done; then it stops the traffic and the nodes, and
// removes a temporary data folder.
func Serve(ctx context.Context, cfg Config) (err error) {
	if err := cfg.Settings.validate(); err != nil {
		return err
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := &Dev{cfg: cfg, ctx: ctx, Events: &EventLog{}, Recorder: console.NewRecorder()}
	d.s, err = d.startSession(cfg.Settings)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.cur().close(false); cerr != nil && err == nil {
			err = cerr
		}
	}()

	var wg sync.WaitGroup
	defer wg.Wait()
	static, _ := fs.Sub(webFS, "web")
	ccfg := d.consoleConfig(d.cur().Cluster)
	ccfg.Listen, ccfg.Logger, ccfg.Ready = cfg.Listen, cfg.Logger, cfg.Ready
	ccfg.Scripts = []string{"/dev/static/panel.js"}
	// The console's actions (an election, a group reset...) go into
	// the event log beside the faults.
	ccfg.OnAction = func(a console.Action) {
		text := a.Text
		if !a.OK {
			text = "refused: " + text
		}
		d.Events.Add("action", text, map[string]any{"kind": a.Kind, "action": a.Name, "target": a.Target, "ok": a.OK, "error": a.Error})
	}
	ccfg.Producers = func() []console.NamedProducer { return d.cur().Traffic.Named() }
	ccfg.Mount = func(mux *http.ServeMux, p *console.Poller) {
		d.mu.Lock()
		d.poller = p
		d.mu.Unlock()
		mux.Handle("GET /dev/static/", http.StripPrefix("/dev/static/", http.FileServerFS(static)))
		d.routes(mux)
		wg.Go(func() { watch(ctx, p, d.Events) })
		wg.Go(func() { console.Record(ctx, p, d.Recorder) })
	}
	return console.Serve(ctx, ccfg)
}

// consoleConfig is how the console polls cluster c: every half second,
// straight to the nodes (not through the proxies, so that a node cut off
// from the clients is still seen).
func (d *Dev) consoleConfig(c *Cluster) console.Config {
	return console.Config{Brokers: c.Seeds(), Controllers: c.Controllers(), Interval: 500 * time.Millisecond,
		ClientOpts: []kgo.Opt{kgo.Dialer(c.DirectDialer())}}
}

// startSession starts a cluster of st's shape in the data folder, its
// clients and traffic, and (in the background) waits for it to serve,
// creates the topic and starts the built-in producers and consumers.
func (d *Dev) startSession(st Settings) (*session, error) {
	c, err := newCluster(ClusterConfig{Nodes: st.Nodes, Dir: d.cfg.Dir, Exe: d.cfg.Exe, Overrides: d.cfg.Overrides}, d.Events)
	if err != nil {
		return nil, err
	}
	s := &session{settings: st, Cluster: c, Ledger: newLedger()}
	for _, n := range c.Nodes {
		if err := c.Start(n.ID); err != nil {
			c.Close()
			return nil, err
		}
		d.Events.Add("node", fmt.Sprintf("node %d started", n.ID), map[string]any{"node": n.ID})
	}
	for _, ns := range c.States() {
		fmt.Fprintf(d.cfg.Out, "  node %d: clients %s (its own listener 127.0.0.1:%d), peers %s, controller %s, log %s/node-%d.log\n",
			ns.ID, ns.ClientAddr, ns.ClientPort, ns.ReplicationAddr, ns.ControllerAddr, d.cfg.Dir, ns.ID)
	}
	s.observer, err = kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.Dialer(c.DirectDialer()),
		kgo.ClientID("moldau-dev-observer"), kgo.RetryTimeout(5*time.Second), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		c.Close()
		return nil, err
	}
	s.Traffic = newTraffic(c.Seeds(), s.Ledger, d.Events)
	ctx, cancel := context.WithCancel(d.ctx)
	s.cancel = cancel
	s.wg.Go(func() { d.setUp(ctx, s) })
	if d.cfg.CheckInterval > 0 {
		s.wg.Go(func() { d.checkLoop(ctx, s) })
	}
	return s, nil
}

// close stops the session: its background work, its traffic and clients,
// and its nodes (SIGTERM, or SIGKILL when discard: its data is about to
// go).
func (s *session) close(discard bool) error {
	s.cancel()
	s.wg.Wait()
	s.Traffic.Close()
	s.observer.Close()
	if s.console != nil {
		s.console.Close()
	}
	if discard {
		for _, n := range s.Cluster.Nodes {
			s.Cluster.Kill(n.ID) // a node not running says so: nothing to do
		}
	}
	return s.Cluster.Close()
}

// Rebuild replaces the cluster with a new one of st's shape: the traffic
// stops, every node is killed and its data removed, and the new nodes
// start empty in the same folder (their logs go on in node-N.log) with
// the topic and the traffic st names. The event log and the recording
// go on across it; the delivery counters start again.
func (d *Dev) Rebuild(st Settings) error {
	if err := st.validate(); err != nil {
		return err
	}
	d.rebuildMu.Lock()
	defer d.rebuildMu.Unlock()
	if d.ctx.Err() != nil {
		return d.ctx.Err()
	}
	old := d.cur()
	d.Events.Add("cluster", fmt.Sprintf("rebuilding: %d nodes, topic %s with %d partitions, replication factor %d, %v; %d producers, %d consumers",
		st.Nodes, st.Topic, st.Partitions, st.ReplicationFactor, st.TopicConfigs, len(st.Producers), len(st.Consumers)), map[string]any{"settings": st})
	old.close(true)
	for _, n := range old.Cluster.Nodes {
		if err := os.RemoveAll(n.Dir); err != nil {
			return err
		}
	}
	s, err := d.startSession(st)
	if err != nil {
		return fmt.Errorf("starting the new cluster: %w", err)
	}
	cl, err := console.NewClient(d.consoleConfig(s.Cluster))
	if err != nil {
		s.close(true)
		return err
	}
	s.console = cl
	d.mu.Lock()
	d.s = s
	if d.poller != nil {
		d.poller.SetClient(cl)
		ccfg := d.consoleConfig(s.Cluster)
		d.poller.SetControllers(ccfg.Controllers, ccfg.ClientOpts...)
	}
	d.mu.Unlock()
	return nil
}

// setUp waits for the cluster, creates the topic and starts the traffic.
func (d *Dev) setUp(ctx context.Context, s *session) {
	adm := kadm.NewClient(s.observer)
	st := s.settings
	// Every node must list every broker. A client of its own per try:
	// a kgo client whose first Metadata came from a node that had just
	// started has been seen to be answered with that one broker for
	// tens of seconds.
	err := poll(ctx, 60*time.Second, func() error {
		for _, seed := range s.Cluster.Seeds() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.Dialer(s.Cluster.DirectDialer()), kgo.RetryTimeout(2*time.Second))
			if err != nil {
				return err
			}
			m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
			cl.Close()
			if err != nil {
				return err
			}
			if len(m.Brokers) < st.Nodes {
				return fmt.Errorf("%s lists %d of %d brokers", seed, len(m.Brokers), st.Nodes)
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
	fmt.Fprintf(d.cfg.Out, "moldau dev: %d nodes serving (seed brokers %s)\n", st.Nodes, joinComma(s.Cluster.Seeds()))
	d.Events.Add("node", "every node serves", nil)
	if st.Topic != "" {
		rf := min(st.ReplicationFactor, int16(st.Nodes))
		cfgs := map[string]*string{}
		for k, v := range st.TopicConfigs {
			// A min.insync.replicas above the replication factor (one
			// node, say) would refuse every acks=all write.
			if n, err := strconv.Atoi(v); k == "min.insync.replicas" && err == nil && n > int(rf) {
				v = strconv.Itoa(int(rf))
				fmt.Fprintf(d.cfg.Out, "moldau dev: min.insync.replicas %d lowered to the replication factor, %d\n", n, rf)
			}
			cfgs[k] = &v
		}
		if _, err := adm.CreateTopic(ctx, st.Partitions, rf, cfgs, st.Topic); err != nil {
			fmt.Fprintf(d.cfg.Out, "moldau dev: creating topic %s: %v\n", st.Topic, err)
			d.Events.Add("topic", fmt.Sprintf("creating topic %s failed: %v", st.Topic, err), nil)
		} else {
			d.Events.Add("topic", fmt.Sprintf("topic %s created: %d partitions, replication factor %d, %v", st.Topic, st.Partitions, rf, st.TopicConfigs), nil)
		}
	}
	for _, p := range st.Producers {
		if err := s.Traffic.AddProducer(p); err != nil {
			fmt.Fprintf(d.cfg.Out, "moldau dev: producer: %v\n", err)
		}
	}
	for _, c := range st.Consumers {
		if err := s.Traffic.AddConsumer(c); err != nil {
			fmt.Fprintf(d.cfg.Out, "moldau dev: consumer: %v\n", err)
		}
	}
}

func (d *Dev) checkLoop(ctx context.Context, s *session) {
	t := time.NewTicker(d.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.check(ctx, s)
		}
	}
}

// check runs one check of session s's delivery counters against the
// logs.
func (d *Dev) check(ctx context.Context, s *session) error {
	d.checkMu.Lock()
	defer d.checkMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return s.Ledger.Check(ctx, s.observer, d.Events)
}

// KillController kills (SIGKILL) the active controller and returns its id.
func (d *Dev) KillController(ctx context.Context) (int32, error) {
	s := d.cur()
	m, err := kadm.NewClient(s.observer).BrokerMetadata(ctx)
	if err != nil {
		return -1, err
	}
	if m.Controller < 0 {
		return -1, errors.New("no active controller")
	}
	return m.Controller, s.Cluster.Kill(m.Controller)
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
		s := d.cur()
		console.WriteJSON(w, http.StatusOK, State{Nodes: s.Cluster.States(), Counters: s.Ledger.Counters()})
	})
	mux.HandleFunc("GET /api/dev/counters", func(w http.ResponseWriter, r *http.Request) {
		console.WriteJSON(w, http.StatusOK, d.cur().Ledger.Counters())
	})
	mux.HandleFunc("GET /api/dev/settings", func(w http.ResponseWriter, r *http.Request) {
		console.WriteJSON(w, http.StatusOK, d.cur().settings)
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
		console.WriteJSON(w, http.StatusOK, map[string]any{"events": evs, "dropped": dropped})
	})
	mux.HandleFunc("GET /api/dev/run", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("download") != "" {
			w.Header().Set("Content-Disposition", `attachment; filename="moldau-dev-run.json"`)
		}
		console.WriteJSON(w, http.StatusOK, d.run())
	})
	post := func(path string, fn func(r *http.Request) (any, error)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			// A JSON body only: a form posted by another site cannot
			// reach the API without a CORS preflight, which it fails.
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				console.WriteJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "Content-Type must be application/json"})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			v, err := fn(r)
			if err != nil {
				console.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			if v == nil {
				v = map[string]bool{"ok": true}
			}
			console.WriteJSON(w, http.StatusOK, v)
		})
	}
	node := func(r *http.Request) (int32, error) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			return 0, fmt.Errorf("node %q: not a number", r.PathValue("id"))
		}
		if _, err := d.cur().Cluster.node(int32(id)); err != nil {
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
		c := d.cur().Cluster
		switch action {
		case "kill":
			err = c.Kill(id)
		case "stop":
			err = c.Stop(id)
		case "start":
			err = c.Start(id)
		case "restart":
			err = c.Restart(id)
		case "cut-peers":
			c.Net.Cut(id, false)
		case "cut-clients":
			c.Net.Cut(id, true)
		case "heal":
			c.Net.Heal(id)
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
		if err := d.cur().Cluster.SlowDisk(r.Context(), id, delay); err != nil {
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
		c := d.cur().Cluster
		if _, err := c.node(req.To); err != nil {
			return nil, err
		}
		if req.From != Clients {
			if _, err := c.node(req.From); err != nil {
				return nil, err
			}
		}
		c.Net.LoseNext(req.Link, req.Response)
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
		return nil, d.cur().Traffic.AddProducer(cfg)
	})
	post("/api/dev/producers/{name}/stop", func(r *http.Request) (any, error) {
		return nil, d.cur().Traffic.StopProducer(r.PathValue("name"))
	})
	post("/api/dev/producers/{name}/wait", func(r *http.Request) (any, error) {
		ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
		defer cancel()
		return nil, d.cur().Traffic.WaitProducer(ctx, r.PathValue("name"))
	})
	post("/api/dev/consumers", func(r *http.Request) (any, error) {
		var cfg ConsumerConfig
		if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil {
			return nil, err
		}
		return nil, d.cur().Traffic.AddConsumer(cfg)
	})
	post("/api/dev/consumers/{name}/{action}", func(r *http.Request) (any, error) {
		name := r.PathValue("name")
		switch a := r.PathValue("action"); a {
		case "close":
			return nil, d.cur().Traffic.CloseConsumer(name)
		case "crash":
			return nil, d.cur().Traffic.CrashConsumer(name)
		case "restart":
			return nil, d.cur().Traffic.RestartConsumer(name)
		default:
			return nil, fmt.Errorf("unknown action %q: close, crash or restart", a)
		}
	})
	post("/api/dev/check", func(r *http.Request) (any, error) {
		s := d.cur()
		if err := d.check(r.Context(), s); err != nil {
			return nil, err
		}
		return s.Ledger.Counters(), nil
	})
	post("/api/dev/rebuild", func(r *http.Request) (any, error) {
		var st Settings
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return nil, err
		}
		if err := d.Rebuild(st); err != nil {
			return nil, err
		}
		return d.cur().settings, nil
	})
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
