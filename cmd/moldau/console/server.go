package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

//go:embed web
var webFS embed.FS

// Config is what a console runs with. Zero values take the defaults.
type Config struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// Controllers, if set, are controller listeners (host:port) to
	// follow the metadata log from (--bootstrap-controller): the
	// console fetches __cluster_metadata from the active one as an
	// observer with no replica id, and shows its records as events of
	// kind "metadata". ClientOpts apply to them too.
	Controllers []string
	// Listen is the HTTP address (default localhost:8080; port 0 picks a
	// free one, which Ready is told).
	Listen string
	// MetricsURLs are Prometheus /metrics pages to read (Moldau brokers'
	// moldau.metrics.listener), each a URL or ID=URL for broker ID's;
	// none: no metrics. MetricsInterval is the
	// time between two reads (default 5s: a broker with a thousand
	// partitions spends about 2 % of a core serving its page every
	// second, 0.4 % every five).
	MetricsURLs     []string
	MetricsInterval time.Duration
	// Interval is the time between polls (default 1s); Timeout bounds
	// one poll (default 5s); DialTimeout a connection (default 3s).
	Interval, Timeout, DialTimeout time.Duration
	// MaxClients bounds the event streams served at once (default 32).
	MaxClients int
	// Heartbeat is how often an idle event stream gets a comment line
	// (default 15s).
	Heartbeat time.Duration
	// ClientOpts are added to the kgo client's options (TLS, SASL).
	ClientOpts []kgo.Opt
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Ready, if set, is called with the listening address once the
	// server accepts connections.
	Ready func(addr net.Addr)
	// Mount, if set, adds handlers to the console's mux before it
	// serves (`moldau dev` adds its control API and panel there) and is
	// given the poller, to follow its snapshots with Current.
	Mount func(mux *http.ServeMux, p *Poller)
	// Producers, if set, lists producers known by name (`moldau dev`'s
	// built-in ones); it is called once a poll and must not block.
	Producers func() []NamedProducer
	// Scripts are URLs of extra ES modules the page loads after its own
	// (the dev panel); none for a plain console.
	Scripts []string
	// ReadOnly hides the details panel's actions, and POST /api/act/...
	// answers 403 (--read-only).
	ReadOnly bool
	// OnAction, if set, is told of every action taken or refused through
	// POST /api/act/... (`moldau dev` adds it to its event log).
	OnAction func(Action)
}

func (c *Config) defaults() {
	if c.Listen == "" {
		c.Listen = "localhost:8080"
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.MetricsInterval <= 0 {
		c.MetricsInterval = 5 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 3 * time.Second
	}
	if c.MaxClients <= 0 {
		c.MaxClients = 32
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Serve runs a console until ctx is done, then shuts the HTTP server down
// and waits for its goroutines. A cluster that is down is not an error:
// the page says so and the poller keeps trying.
func Serve(ctx context.Context, cfg Config) error {
	cfg.defaults()
	if len(cfg.Brokers) == 0 {
		return errors.New("no brokers given")
	}
	cl, err := NewClient(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	poller := NewPoller(cl, cfg.Interval, cfg.Timeout, cfg.MetricsURLs, cfg.Logger)
	poller.metricsEvery = cfg.MetricsInterval
	poller.named = cfg.Producers
	poller.meta.bootstrap, poller.meta.opts = cfg.Controllers, controllerOpts(cfg)
	h := newHandler(poller, cfg)
	if cfg.Mount != nil {
		cfg.Mount(h.mux, poller)
	}
	return serve(ctx, cfg, h, poller.Run)
}

// NewClient is the kgo client a console polls cfg.Brokers with (its
// timeouts, metadata age and cfg.ClientOpts); Serve makes one, and a
// caller handing a Poller another cluster (SetClient) makes the next.
func NewClient(cfg Config) (*kgo.Client, error) {
	cfg.defaults()
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID("moldau-console"),
		kgo.DialTimeout(cfg.DialTimeout),
		kgo.RetryTimeout(cfg.Timeout),
		kgo.MetadataMinAge(cfg.Interval / 2),
	}, cfg.ClientOpts...)...)
}

// controllerOpts are the options of the clients that fetch the metadata
// log: cfg's dial timeout and ClientOpts. A Fetch is sent once, never
// retried: the next tick sends the next.
func controllerOpts(cfg Config) []kgo.Opt {
	return append([]kgo.Opt{kgo.DialTimeout(cfg.DialTimeout)}, cfg.ClientOpts...)
}

// ServeReplay serves a console that plays run back instead of polling a
// cluster (`moldau console --replay`), with its timeline on the page,
// until ctx is done. cfg.Brokers, Mount and the polling settings are not
// used.
func ServeReplay(ctx context.Context, cfg Config, run *Run) error {
	cfg.defaults()
	r, err := NewReplay(run)
	if err != nil {
		return err
	}
	cfg.Scripts = append([]string{"/static/replay.js"}, cfg.Scripts...)
	cfg.ReadOnly = true // a recording cannot be acted on
	h := newHandler(r, cfg)
	r.mount(h.mux)
	return serve(ctx, cfg, h, r.Run)
}

// serve listens, runs the snapshot source's loop and the HTTP server
// until ctx is done, then stops both and waits for them.
func serve(ctx context.Context, cfg Config, h *handler, run func(context.Context)) error {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return h.ctx }}

	var wg sync.WaitGroup
	sctx, stopSource := context.WithCancel(ctx)
	defer stopSource()
	wg.Go(func() { run(sctx) })
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- srv.Serve(ln) })
	cfg.Logger.Debug("console listening", "addr", ln.Addr().String())
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}

	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	stopSource()
	h.cancel() // ends the event streams, which Shutdown would wait for
	shctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shctx); serr != nil && err == nil {
		err = serr
	}
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// source is where the console's snapshots come from: a [Poller] on a
// live cluster, or a [Replay] of a recorded run.
type source interface {
	Current() (*Snapshot, <-chan struct{})
}

// handler serves the page, the assets, the snapshot and the event stream.
type handler struct {
	mux     *http.ServeMux
	src     source
	cfg     Config
	slots   chan struct{} // one per event stream being served
	ctx     context.Context
	cancel  context.CancelFunc
	indexed []byte // web/index.html
}

func newHandler(src source, cfg Config) *handler {
	ctx, cancel := context.WithCancel(context.Background())
	h := &handler{mux: http.NewServeMux(), src: src, cfg: cfg, slots: make(chan struct{}, cfg.MaxClients), ctx: ctx, cancel: cancel}
	static, _ := fs.Sub(webFS, "web")
	h.indexed, _ = fs.ReadFile(static, "index.html")
	if len(cfg.Scripts) > 0 {
		var tags []byte
		for _, src := range cfg.Scripts {
			tags = fmt.Appendf(tags, "<script type=\"module\" src=\"%s\"></script>\n", html.EscapeString(src))
		}
		h.indexed = bytes.Replace(h.indexed, []byte("</body>"), append(tags, "</body>"...), 1)
	}
	if cfg.ReadOnly {
		h.indexed = bytes.Replace(h.indexed, []byte("<body>"), []byte(`<body data-read-only="true">`), 1)
	}
	h.mux.HandleFunc("GET /{$}", h.index)
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET /api/snapshot", h.snapshot)
	h.mux.HandleFunc("GET /api/events", h.events)
	h.mux.HandleFunc("GET /api/broker/{id}/configs", h.brokerConfigs)
	h.mux.HandleFunc("POST /api/act/{kind}/{name}", h.act)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
}

func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(h.indexed)
}

// snapshot answers the current snapshot as JSON; 503 before the first
// poll finished.
func (h *handler) snapshot(w http.ResponseWriter, r *http.Request) {
	s, _ := h.src.Current()
	if s == nil {
		http.Error(w, "no snapshot yet", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(s.data)
}

// WriteJSON answers v as JSON with status, never cached (the console's
// API, and the dev panel's mounted beside it).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// events streams snapshots as server-sent events: the current one on
// connect, then each newer one ("event: snapshot"), and a comment line
// every Heartbeat. It ends when the client goes away or the console stops.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("too many event streams (at most %d)", h.cfg.MaxClients), http.StatusServiceUnavailable)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	heartbeat := time.NewTicker(h.cfg.Heartbeat)
	defer heartbeat.Stop()
	var sent int64
	for {
		s, changed := h.src.Current()
		if s != nil && s.Seq != sent {
			if err := writeEvent(w, s); err != nil || rc.Flush() != nil {
				return
			}
			sent = s.Seq
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.ctx.Done():
			return
		case <-changed:
		case <-heartbeat.C:
			if _, err := io.WriteString(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// writeEvent writes one snapshot event; its id is the snapshot's Seq.
func writeEvent(w io.Writer, s *Snapshot) error {
	_, err := fmt.Fprintf(w, "event: snapshot\nid: %d\ndata: %s\n\n", s.Seq, s.data)
	return err
}
