package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/kapi"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/metadata"
	"github.com/moldau/moldau/replica"
)

// Options are what a Broker takes besides its configuration.
type Options struct {
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// Registry receives every metric of this broker; nil: a new registry
	// per broker, so several brokers run in one process.
	Registry *prometheus.Registry
}

// Broker is one Moldau broker: it wires the parts in Kafka's start-up
// order (storage, metadata, replica manager, request handlers, socket
// server) and tears them down in reverse (Kafka's BrokerServer).
type Broker struct {
	cfg       *config.KafkaConfig
	log       *slog.Logger
	registry  *prometheus.Registry
	clusterID string

	meta     *metadata.Store
	logs     *log.Manager
	replicas *replica.Manager
	handler  *kapi.Handler
	socket   *SocketServer
	metrics  *Metrics
	httpSrv  *MetricsServer

	// unregister removes the broker's Reconfigurable from cfg.
	unregister func()

	closeOnce sync.Once
	closeErr  error
}

// New builds a broker: it checks or writes meta.properties in every log
// dir, loads the cluster metadata and the logs (running recovery after an
// unclean shutdown) and binds the listeners, but serves nothing until
// Start.
func New(cfg *config.KafkaConfig, opts Options) (_ *Broker, err error) {
	b := &Broker{cfg: cfg, log: opts.Logger, registry: opts.Registry}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.registry == nil {
		b.registry = prometheus.NewRegistry()
	}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()

	if b.clusterID, err = ensureMetaProperties(cfg.LogDirs, cfg.NodeID); err != nil {
		return nil, err
	}
	metaDir := cfg.MetadataLogDir
	if metaDir == "" {
		metaDir = cfg.LogDirs[0]
	}
	if b.meta, err = metadata.Open(metadata.Options{Dir: metaDir, NodeID: cfg.NodeID, Logger: b.log}); err != nil {
		return nil, fmt.Errorf("loading cluster metadata: %w", err)
	}
	for _, r := range b.meta.BrokerConfigResources() {
		for _, w := range cfg.SetDynamic(r, b.meta.BrokerConfigs(r)) {
			b.log.Warn(w)
		}
	}
	configFor := func(t metadata.Topic) log.Config { return cfg.LogConfig(t.Configs) }
	b.logs, err = log.NewManager(log.ManagerConfig{
		Dirs:   cfg.LogDirs,
		Logger: b.log,
		ConfigFor: func(topic string) log.Config {
			t, _ := b.meta.Topic(topic)
			return configFor(t)
		},
		TopicIDFor: func(topic string) ([16]byte, bool) {
			t, ok := b.meta.Topic(topic)
			return t.ID, ok
		},
		RecoveryThreadsPerDataDir:          cfg.NumRecoveryThreadsPerDataDir,
		RetentionCheckInterval:             cfg.LogRetentionCheckInterval,
		FlushSchedulerInterval:             cfg.LogFlushSchedulerInterval,
		FlushOffsetCheckpointInterval:      cfg.LogFlushOffsetCheckpointInterval,
		FlushStartOffsetCheckpointInterval: cfg.LogFlushStartOffsetCheckpointInterval,
		Registerer:                         b.registry,
	})
	if err != nil {
		return nil, fmt.Errorf("loading logs: %w", err)
	}
	b.replicas, err = replica.NewManager(replica.Config{
		NodeID:     cfg.NodeID,
		Logs:       b.logs,
		Metadata:   b.meta,
		ConfigFor:  configFor,
		Logger:     b.log,
		Registerer: b.registry,
	})
	if err != nil {
		return nil, err
	}
	b.handler = kapi.New(kapi.Config{
		NodeID:    cfg.NodeID,
		ClusterID: b.clusterID,
		Rack:      rack(cfg.RackID),
		Logger:    b.log,
		Endpoints: b.endpoints,
		Broker:    cfg,
		Metadata:  b.meta,
		Replicas:  b.replicas,
		Logs:      b.logs,
	})
	b.metrics = NewMetrics(b.registry)
	listeners := make([]ListenerConfig, len(cfg.Listeners))
	for i, l := range cfg.Listeners {
		listeners[i] = ListenerConfig{Name: l.Name, Host: l.Host, Port: l.Port}
	}
	// num.io.threads and num.network.threads may be dynamic (set with
	// AlterConfigs, persisted, installed above): start with the values
	// in effect, and follow their changes.
	b.socket, err = NewSocketServer(SocketServerConfig{
		Listeners:                listeners,
		NumNetworkThreads:        int(cfg.GetInt("num.network.threads")),
		NumIOThreads:             int(cfg.GetInt("num.io.threads")),
		QueuedMaxRequests:        cfg.QueuedMaxRequests,
		SocketRequestMaxBytes:    cfg.SocketRequestMaxBytes,
		SocketSendBufferBytes:    cfg.SocketSendBufferBytes,
		SocketReceiveBufferBytes: cfg.SocketReceiveBufferBytes,
		ConnectionsMaxIdle:       cfg.ConnectionsMaxIdle,
		Handler:                  b.handler,
		Logger:                   b.log,
		Metrics:                  b.metrics,
	})
	if err != nil {
		return nil, err
	}
	b.unregister = cfg.AddReconfigurable(config.ReconfigurableFunc{
		Keys: []string{"num.io.threads", "num.network.threads"},
		Apply: func(old, new map[string]any) {
			if n, _ := new["num.io.threads"].(int32); n != old["num.io.threads"] {
				b.socket.ResizeHandlers(int(n))
			}
			if n, _ := new["num.network.threads"].(int32); n != old["num.network.threads"] {
				b.socket.ResizeProcessors(int(n))
			}
		},
	})
	if cfg.MetricsListener != "" {
		if b.httpSrv, err = ServeMetrics(cfg.MetricsListener, b.registry, b.log); err != nil {
			return nil, fmt.Errorf("metrics listener %s: %w", cfg.MetricsListener, err)
		}
	}
	return b, nil
}

func rack(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Start starts the logs' background work and begins serving.
func (b *Broker) Start() {
	b.logs.Start()
	b.socket.Start()
	for _, l := range b.cfg.Listeners {
		b.log.Info("listening", "listener", l.Name, "addr", b.socket.Addr(l.Name).String())
	}
	if b.httpSrv != nil {
		b.log.Info("serving /metrics and /debug/pprof", "addr", b.httpSrv.Addr().String())
	}
}

// Addr returns the bound address of a listener ("" means the first).
func (b *Broker) Addr(listener string) net.Addr {
	if listener == "" {
		listener = b.cfg.Listeners[0].Name
	}
	return b.socket.Addr(listener)
}

// MetricsAddr returns the metrics HTTP listener's address, or nil.
func (b *Broker) MetricsAddr() net.Addr {
	if b.httpSrv == nil {
		return nil
	}
	return b.httpSrv.Addr()
}

// NumIOThreads and NumNetworkThreads are the sizes of the request handler
// pool and of each listener's processors, which follow num.io.threads and
// num.network.threads, also when AlterConfigs changes them.
func (b *Broker) NumIOThreads() int      { return b.socket.NumIOThreads() }
func (b *Broker) NumNetworkThreads() int { return b.socket.NumNetworkThreads() }

// ClusterID returns the cluster ID from meta.properties.
func (b *Broker) ClusterID() string { return b.clusterID }

// Registry returns the broker's metrics registry.
func (b *Broker) Registry() *prometheus.Registry { return b.registry }

// endpoints are the advertised listeners, with an ephemeral port replaced
// by the port the listener actually bound.
func (b *Broker) endpoints() []kapi.Endpoint {
	adv := b.cfg.Advertised(func(listener string) int {
		if a, ok := b.socket.Addr(listener).(*net.TCPAddr); ok && a != nil {
			return a.Port
		}
		return 0
	})
	eps := make([]kapi.Endpoint, 0, len(adv))
	for _, l := range adv {
		eps = append(eps, kapi.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port)})
	}
	return eps
}

// Close stops accepting connections, answers the fetches waiting in the
// purgatory (a consumer's long poll would otherwise hold the drain up for
// its fetch.max.wait.ms), lets in-flight requests finish, and closes the
// logs cleanly (so the next start skips recovery). Idempotent.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		var errs []error
		if b.unregister != nil {
			b.unregister()
		}
		if b.socket != nil {
			b.socket.StopAccepting()
			if b.replicas != nil {
				b.replicas.BeginShutdown()
			}
			errs = append(errs, b.socket.Close())
		}
		if b.httpSrv != nil {
			errs = append(errs, b.httpSrv.Close())
		}
		if b.replicas != nil {
			b.replicas.Close()
		}
		if b.logs != nil {
			errs = append(errs, b.logs.Close())
		}
		if b.meta != nil {
			errs = append(errs, b.meta.Close())
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}
