package network

import (
	"github.com/moldau/moldau/broker/routine"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/memory"
	"github.com/moldau/moldau/kapi"
)

// RequestHandler serves requests; it is Kafka's KafkaApis as seen from the
// socket server (kapi.Handler implements it).
type RequestHandler interface {
	// Handle serves one request; respond is called exactly once, possibly
	// later from another goroutine.
	Handle(ctx context.Context, r *kapi.Request, respond func(*kapi.Response))
}

// ListenerConfig is one listener to bind. Port 0 binds an ephemeral port.
type ListenerConfig struct {
	Name string
	Host string // "" binds every interface
	Port int
	// ChannelBuilder secures the listener's connections (SSL); nil:
	// PLAINTEXT.
	ChannelBuilder ChannelBuilder
}

// Config configures a SocketServer. The fields take the values
// of the Kafka properties named in their comments; zero values take Kafka's
// defaults.
type Config struct {
	Listeners []ListenerConfig // listeners

	NumNetworkThreads     int   // num.network.threads (per listener), default 3
	NumIOThreads          int   // num.io.threads, default 8
	QueuedMaxRequests     int   // queued.max.requests, default 500
	SocketRequestMaxBytes int32 // socket.request.max.bytes, default 104857600

	// socket.send.buffer.bytes, socket.receive.buffer.bytes: applied when
	// positive; -1 (or 0) leaves the OS default.
	SocketSendBufferBytes, SocketReceiveBufferBytes int

	// connections.max.idle.ms; 0 means Kafka's default, 10 minutes, and a
	// negative value disables the idle close.
	ConnectionsMaxIdle time.Duration

	// ShutdownTimeout bounds how long Close lets in-flight requests finish
	// before forcing the connections closed; default 30 s.
	ShutdownTimeout time.Duration

	// ConnectionSummaryInterval is how often connections opened and
	// closed are summarised at INFO (each one is logged at DEBUG);
	// default 1 minute.
	ConnectionSummaryInterval time.Duration

	// QueuedMaxRequestBytes is queued.max.request.bytes, the size of the
	// request memory pool every frame reserves before it is read; <= 0
	// is unbounded. MemoryPool, when set, is used instead (the broker
	// shares the data plane's pool with decompression in the logs).
	QueuedMaxRequestBytes int64
	MemoryPool            *memory.Pool

	// RequestReceiveTimeout is moldau.socket.request.receive.timeout.ms:
	// the time a request may take to arrive from its first byte; 0 none.
	// SetRequestReceiveTimeout changes it.
	RequestReceiveTimeout time.Duration

	// ConnectionQuotas, when set, are enforced on the listeners
	// (max.connections and the rest); nil: no limits.
	// SetConnectionQuotas changes them. ProtectedListener is the
	// inter-broker listener, limited only by its own quotas when there
	// are several listeners.
	ConnectionQuotas  *config.ConnectionQuotas
	ProtectedListener string

	Handler RequestHandler // required
	// PrivateAPIKeys are API keys outside Kafka's that this server
	// passes to the handler with a v1 header (the metadata quorum's
	// messages on the controller listener); any other unknown key closes
	// the connection.
	PrivateAPIKeys []int16
	// DisconnectListeners are told of every connection that closes,
	// whatever closed it (Kafka's ConnectionDisconnectListener).
	DisconnectListeners []ConnectionDisconnectListener
	Logger              *slog.Logger // nil discards
	Metrics             *Metrics     // nil: no metrics
}

const (
	defaultNumNetworkThreads     = 3
	defaultNumIOThreads          = 8
	defaultQueuedMaxRequests     = 500
	defaultSocketRequestMaxBytes = 100 * 1024 * 1024
	defaultConnectionsMaxIdle    = 10 * time.Minute
	defaultShutdownTimeout       = 30 * time.Second

	idleSampleInterval = time.Second
	idleWindowSamples  = 6 // window of 5 intervals
)

// SocketServer is Kafka's SocketServer: it owns the listeners, their
// acceptors and processors, the request channel and the handler pool.
type SocketServer struct {
	cfg     Config
	log     *slog.Logger
	metrics *Metrics
	epoch   time.Time

	connLog *connectionLog

	acceptors []*acceptor
	// builders are the listeners' channel builders (nil: PLAINTEXT).
	builders map[string]ChannelBuilder
	// procMu guards processors and nextProcessorID. processors holds
	// every processor that may still own connections: those the
	// acceptors assign to, and those retired by a smaller
	// num.network.threads until their connections are gone.
	procMu          sync.Mutex
	processors      []*processor
	nextProcessorID int
	procVersion     atomic.Int64 // bumped when the acceptors' processors change
	channel         *requestChannel
	handlers        *kafkaRequestHandlerPool
	frames          framePool

	// pool is the request memory pool (queued.max.request.bytes).
	pool *memory.Pool
	// quotas are the connection quotas; nil: none.
	quotas *connectionQuotas
	// receiveTimeout is the request receive timeout in ns (0: none).
	receiveTimeout atomic.Int64
	// evicting counts connections closing to bring the broker under
	// max.connections.
	evicting atomic.Int64
	// peerLog rate-limits log lines about misbehaving peers.
	peerLog *peerLog
	// limits are the metrics of the limits; nil without metrics.
	limits *limitMetrics

	// sampleInterval is the idle gauges' sampling period (tests shorten it).
	sampleInterval time.Duration
	// networkIdle and handlerIdle are the last values of the idle gauges,
	// as math.Float64bits.
	networkIdle, handlerIdle atomic.Uint64
	queueLenFn               *func() int // registered with metrics.queueLen
	// sendfileBytes counts bytes written with sendfile(2).
	sendfileBytes atomic.Int64

	// ctx is handed to Handle; cancelled when shutdown is forced or done.
	ctx    context.Context
	cancel context.CancelFunc

	acceptorGroup, connGroup, handlerGroup, backgroundGroup routine.Group

	// forced is closed when the graceful drain timed out: blocked
	// connection goroutines give up.
	forced    chan struct{}
	forceOnce sync.Once
	// stopHandlers is closed when the handler pool must stop.
	stopHandlers chan struct{}
	// stopBackground stops the idle sampler.
	stopBackground chan struct{}
	// acceptDone is closed by StopAccepting.
	acceptDone chan struct{}

	mu         sync.Mutex
	started    bool
	closing    bool
	stopAccept sync.Once
	closeOnce  sync.Once
	closeErr   error
}

// NewSocketServer validates cfg and binds every listener, so that their
// addresses are known, but starts nothing.
func NewSocketServer(cfg Config) (*SocketServer, error) {
	if cfg.Handler == nil {
		return nil, errors.New("socket server: no request handler")
	}
	if len(cfg.Listeners) == 0 {
		return nil, errors.New("socket server: no listeners")
	}
	if cfg.NumNetworkThreads <= 0 {
		cfg.NumNetworkThreads = defaultNumNetworkThreads
	}
	if cfg.NumIOThreads <= 0 {
		cfg.NumIOThreads = defaultNumIOThreads
	}
	if cfg.QueuedMaxRequests <= 0 {
		cfg.QueuedMaxRequests = defaultQueuedMaxRequests
	}
	if cfg.SocketRequestMaxBytes <= 0 {
		cfg.SocketRequestMaxBytes = defaultSocketRequestMaxBytes
	}
	if cfg.ConnectionsMaxIdle == 0 {
		cfg.ConnectionsMaxIdle = defaultConnectionsMaxIdle
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = defaultShutdownTimeout
	}
	if cfg.ConnectionSummaryInterval <= 0 {
		cfg.ConnectionSummaryInterval = defaultConnectionSummaryInterval
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &SocketServer{
		cfg:            cfg,
		log:            logger,
		metrics:        cfg.Metrics,
		epoch:          time.Now(),
		channel:        newRequestChannel(cfg.QueuedMaxRequests),
		sampleInterval: idleSampleInterval,
		forced:         make(chan struct{}),
		stopHandlers:   make(chan struct{}),
		stopBackground: make(chan struct{}),
		acceptDone:     make(chan struct{}),
		builders:       make(map[string]ChannelBuilder),
	}
	s.connLog = newConnectionLog(logger, s.epoch)
	s.peerLog = newPeerLog(cfg.ConnectionSummaryInterval, s.epoch)
	s.pool = cfg.MemoryPool
	if s.pool == nil {
		s.pool = memory.NewPool(cfg.QueuedMaxRequestBytes)
	}
	s.receiveTimeout.Store(int64(max(cfg.RequestReceiveTimeout, 0)))
	if cfg.Metrics != nil {
		s.limits = cfg.Metrics.limits
		s.limits.pool.Store(s.pool)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.networkIdle.Store(math.Float64bits(1))
	s.handlerIdle.Store(math.Float64bits(1))
	if s.metrics != nil {
		qlen := s.channel.Len
		s.queueLenFn = &qlen
		s.metrics.queueLen.Store(s.queueLenFn)
	}
	seen := make(map[string]bool)
	for _, lc := range cfg.Listeners {
		if lc.Name == "" || seen[lc.Name] {
			s.closeListeners()
			s.cancel()
			return nil, fmt.Errorf("socket server: listener name %q empty or repeated", lc.Name)
		}
		seen[lc.Name] = true
		if lc.ChannelBuilder != nil {
			s.builders[lc.Name] = lc.ChannelBuilder
		}
		addr := net.JoinHostPort(lc.Host, strconv.Itoa(lc.Port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			s.closeListeners()
			s.cancel()
			return nil, fmt.Errorf("socket server: listener %s: %w", lc.Name, err)
		}
		a := &acceptor{server: s, name: lc.Name, ln: ln, log: logger.With("listener", lc.Name)}
		ps := make([]*processor, cfg.NumNetworkThreads)
		for i := range ps {
			ps[i] = s.newProcessorLocked(lc.Name)
		}
		a.processors.Store(&ps)
		s.acceptors = append(s.acceptors, a)
	}
	if cfg.ConnectionQuotas != nil {
		names := make([]string, len(cfg.Listeners))
		for i, l := range cfg.Listeners {
			names[i] = l.Name
		}
		s.quotas = newConnectionQuotas(*cfg.ConnectionQuotas, cfg.ProtectedListener, names)
	}
	s.handlers = newRequestHandlerPool(s)
	return s, nil
}

// SetHandler replaces the request handler; call it before Start (the
// broker builds kapi's handler after binding the data plane's listeners).
func (s *SocketServer) SetHandler(h RequestHandler) { s.cfg.Handler = h }

// Start starts the handler pool, the processors' accounting and the
// acceptors. It does nothing after Close or a second time.
func (s *SocketServer) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closing {
		return
	}
	s.started = true
	s.handlers.Resize(s.cfg.NumIOThreads)
	s.backgroundGroup.Go(func(<-chan struct{}) { s.sampleIdle() })
	s.backgroundGroup.Go(func(<-chan struct{}) { s.summarizeConnections() })
	for _, a := range s.acceptors {
		s.acceptorGroup.Go(func(<-chan struct{}) { a.run() })
		s.log.Debug("accepting", "listener", a.name, "addr", a.ln.Addr().String())
	}
}

// Addr returns the bound address of the named listener, or nil.
func (s *SocketServer) Addr(listener string) net.Addr {
	for _, a := range s.acceptors {
		if a.name == listener {
			return a.ln.Addr()
		}
	}
	return nil
}

// StopAccepting closes the listeners: no new connection is accepted.
// Existing connections keep being served. It is the first step of shutdown.
func (s *SocketServer) StopAccepting() {
	s.stopAccept.Do(s.closeListeners)
}

func (s *SocketServer) closeListeners() {
	close(s.acceptDone)
	for _, a := range s.acceptors {
		a.closed.Store(true)
		if err := a.ln.Close(); err != nil {
			s.log.Debug("closing listener", "listener", a.name, "err", err)
		}
	}
}

// Close shuts the server down: it stops accepting, lets in-flight requests
// finish (at most ShutdownTimeout, then forces), closes the connections and
// stops the handlers. Every goroutine the server started has ended when
// Close returns. Close is idempotent and returns the same result each time.
func (s *SocketServer) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *SocketServer) shutdown() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	begin := time.Now()

	// 1. No new connections.
	s.StopAccepting()
	s.acceptorGroup.StopAndWait()

	// 2. Drain: idle connections close now, busy ones after their
	// in-flight request.
	s.connGroup.Stop()
	for _, p := range s.allProcessors() {
		p.drain()
	}
	timer := time.NewTimer(s.cfg.ShutdownTimeout)
	defer timer.Stop()
	var err error
	select {
	case <-s.connGroup.Done():
	case <-timer.C:
		// 3. Force.
		n := s.connectionCount()
		var waiting []string
		for _, p := range s.allProcessors() {
			waiting = append(waiting, p.inFlight(time.Now(), 10-len(waiting))...)
		}
		s.log.Warn("shutdown timeout: closing connections with requests in flight", "timeout", s.cfg.ShutdownTimeout, "connections", n,
			"in_flight", strings.Join(waiting, "; "))
		err = fmt.Errorf("socket server: %d connections still busy after %v, closed", n, s.cfg.ShutdownTimeout)
		s.force()
		<-s.connGroup.Done()
	}

	// 4. Handlers, then background.
	s.cancel()
	close(s.stopHandlers)
	s.handlerGroup.StopAndWait()
	close(s.stopBackground)
	s.backgroundGroup.StopAndWait()
	if s.metrics != nil {
		s.metrics.queueLen.CompareAndSwap(s.queueLenFn, nil)
	}
	s.connLog.summarize(time.Now(), 0, s.peerLog.takeSuppressed(time.Now()))
	s.log.Info("socket server closed", "took", time.Since(begin).Round(time.Millisecond))
	return err
}

func (s *SocketServer) force() {
	s.forceOnce.Do(func() {
		close(s.forced)
		s.cancel()
		for _, p := range s.allProcessors() {
			p.force()
		}
	})
}

// sampleIdle updates the idle gauges every sampleInterval. When
// num.network.threads changes, the processor window starts over; the
// handler gauge divides by the pool's current size.
func (s *SocketServer) sampleIdle() {
	var procMeters []*busyMeter
	var procWin *idleWindow
	version := int64(-1)
	handlerMeters := []*busyMeter{s.handlers.busy}
	handlerWin := newIdleWindow(idleWindowSamples, 1)
	sample := func() {
		if v := s.procVersion.Load(); v != version {
			version = v
			procMeters = procMeters[:0]
			for _, p := range s.activeProcessors() {
				procMeters = append(procMeters, p.busy)
			}
			procWin = newIdleWindow(idleWindowSamples, len(procMeters))
		}
		now := int64(time.Since(s.epoch))
		var idleSum float64
		procWin.add(now, procMeters, func(_ int, busy, wall int64) {
			idleSum += 1 - clamp01(float64(busy)/float64(wall))
		})
		var handlerBusy, handlerWall int64
		handlerWin.add(now, handlerMeters, func(_ int, busy, wall int64) {
			handlerBusy += busy
			handlerWall = wall
		})
		if handlerWall == 0 { // first sample
			return
		}
		networkIdle := 1.0
		if len(procMeters) > 0 {
			networkIdle = idleSum / float64(len(procMeters))
		}
		handlers := max(s.handlers.Size(), 1)
		handlerIdle := clamp01(1 - float64(handlerBusy)/(float64(handlerWall)*float64(handlers)))
		s.networkIdle.Store(math.Float64bits(networkIdle))
		s.handlerIdle.Store(math.Float64bits(handlerIdle))
		if s.metrics != nil {
			s.metrics.networkProcessorAvgIdle.Set(networkIdle)
			s.metrics.requestHandlerAvgIdle.Set(handlerIdle)
		}
	}
	sample()
	t := time.NewTicker(s.sampleInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			sample()
		case <-s.stopBackground:
			return
		}
	}
}

// summarizeConnections logs the connection summary every
// ConnectionSummaryInterval until shutdown.
func (s *SocketServer) summarizeConnections() {
	t := time.NewTicker(s.cfg.ConnectionSummaryInterval)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			s.connLog.summarize(now, s.connectionCount(), s.peerLog.takeSuppressed(now))
		case <-s.stopBackground:
			return
		}
	}
}

// acceptor accepts the connections of one listener and hands them
// round-robin to the listener's processors (Kafka's Acceptor).
type acceptor struct {
	server *SocketServer
	name   string
	ln     net.Listener
	log    *slog.Logger
	// processors are those new connections go to, round-robin; replaced
	// as a whole when num.network.threads changes.
	processors atomic.Pointer[[]*processor]
	closed     atomic.Bool
}

func (a *acceptor) run() {
	s := a.server
	next := 0
	backoff := time.Duration(0)
	var lastLogged time.Time
	notLogged := 0
	for {
		nc, err := a.ln.Accept()
		if err != nil {
			if a.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: Kafka logs
			// and keeps accepting; back off so as not to spin,
			// and log at most one line every 10 s of a streak.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			if now := time.Now(); now.Sub(lastLogged) >= 10*time.Second {
				a.log.Warn("accept failed", "err", err, "retry_in", backoff, "failures_not_logged", notLogged)
				lastLogged, notLogged = now, 0
			} else {
				notLogged++
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.acceptDone:
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		addr := peerAddr(nc)
		admitted, stop := s.admit(a.name, nc, addr)
		if stop {
			return
		}
		if !admitted {
			continue
		}
		s.configureSocket(nc)
		ps := *a.processors.Load()
		next %= len(ps)
		p := ps[next]
		next++
		p.register(nc, addr, s.quotas != nil)
	}
}

func (s *SocketServer) configureSocket(nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return
	}
	if err := tc.SetNoDelay(true); err != nil {
		s.log.Debug("TCP_NODELAY", "peer", nc.RemoteAddr().String(), "err", err)
	}
	if n := s.cfg.SocketSendBufferBytes; n > 0 {
		if err := tc.SetWriteBuffer(n); err != nil {
			s.log.Debug("socket.send.buffer.bytes", "peer", nc.RemoteAddr().String(), "err", err)
		}
	}
	if n := s.cfg.SocketReceiveBufferBytes; n > 0 {
		if err := tc.SetReadBuffer(n); err != nil {
			s.log.Debug("socket.receive.buffer.bytes", "peer", nc.RemoteAddr().String(), "err", err)
		}
	}
}

// newProcessorLocked creates a processor of listener and adds it to
// s.processors; s.procMu held (or the server not yet shared).
func (s *SocketServer) newProcessorLocked(listener string) *processor {
	p := newProcessor(s, s.nextProcessorID, listener)
	s.nextProcessorID++
	s.processors = append(s.processors, p)
	return p
}

// allProcessors returns every processor that may own connections.
func (s *SocketServer) allProcessors() []*processor {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	return slices.Clone(s.processors)
}

// activeProcessors returns the processors the acceptors assign to.
func (s *SocketServer) activeProcessors() []*processor {
	var ps []*processor
	for _, a := range s.acceptors {
		ps = append(ps, *a.processors.Load()...)
	}
	return ps
}

// connectionCount is the number of open connections.
func (s *SocketServer) connectionCount() int {
	n := 0
	for _, p := range s.allProcessors() {
		n += p.connectionCount()
	}
	return n
}

// NumNetworkThreads is the number of processors per listener.
func (s *SocketServer) NumNetworkThreads() int { return len(*s.acceptors[0].processors.Load()) }

// NumIOThreads is the number of request handler goroutines.
func (s *SocketServer) NumIOThreads() int { return s.handlers.Size() }

// ResizeHandlers sets the number of request handler goroutines
// (num.io.threads changed at run time).
func (s *SocketServer) ResizeHandlers(n int) {
	s.handlers.Resize(n)
	s.log.Info("resized the request handler pool", "num.io.threads", s.handlers.Size())
}

// ResizeProcessors sets the number of processors per listener
// (num.network.threads changed at run time, as Kafka's
// SocketServer.resizeThreadPool): new processors take new connections at
// once; a removed one takes no more and its connections close after the
// request in flight, as Kafka closes them, so their clients reconnect to
// the remaining ones. Nothing happens once shutdown began.
func (s *SocketServer) ResizeProcessors(n int) {
	n = max(n, 1)
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return
	}
	s.procMu.Lock()
	var retired []*processor
	for _, a := range s.acceptors {
		cur := *a.processors.Load()
		next := slices.Clone(cur)
		for len(next) < n {
			next = append(next, s.newProcessorLocked(a.name))
		}
		if len(next) > n {
			retired = append(retired, next[n:]...)
			next = next[:n]
		}
		a.processors.Store(&next)
	}
	// Forget processors retired earlier whose connections are gone.
	s.processors = slices.DeleteFunc(s.processors, func(p *processor) bool {
		return p.isRetired() && p.connectionCount() == 0
	})
	s.procMu.Unlock()
	s.procVersion.Add(1)
	for _, p := range retired {
		p.retire()
	}
	s.log.Info("resized the network processors", "num.network.threads", n, "listeners", len(s.acceptors))
}
