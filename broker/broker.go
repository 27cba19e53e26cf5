package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/coordinator/group"
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
	groups   *group.Service
	handler  *kapi.Handler
	socket   *SocketServer
	metrics  *Metrics
	httpSrv  *MetricsServer

	unsubscribeGroups func()

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
	if err := b.startGroupCoordinator(); err != nil {
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
		Groups:    b.groups,
	})
	b.metrics = NewMetrics(b.registry)
	listeners := make([]ListenerConfig, len(cfg.Listeners))
	for i, l := range cfg.Listeners {
		listeners[i] = ListenerConfig{Name: l.Name, Host: l.Host, Port: l.Port}
	}
	b.socket, err = NewSocketServer(SocketServerConfig{
		Listeners:                listeners,
		NumNetworkThreads:        cfg.NumNetworkThreads,
		NumIOThreads:             cfg.NumIOThreads,
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

// Close stops accepting connections, lets in-flight requests finish, and
// closes the logs cleanly (so the next start skips recovery). Idempotent.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		var errs []error
		if b.socket != nil {
			b.socket.StopAccepting()
			errs = append(errs, b.socket.Close())
		}
		if b.httpSrv != nil {
			errs = append(errs, b.httpSrv.Close())
		}
		if b.unsubscribeGroups != nil {
			b.unsubscribeGroups()
		}
		if b.groups != nil {
			b.groups.Close()
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

// startGroupCoordinator creates the group coordinator and, until the
// metadata publisher does it, tells it which partitions of
// __consumer_offsets it coordinates: on one node every partition is led
// here, so every partition is elected when the topic exists at start-up or
// is created, and resigned if it is deleted. Topic changes reach the
// consumer groups (and the offsets of deleted topics are dropped). This
// adapter is the only place the group coordinator learns of metadata.
func (b *Broker) startGroupCoordinator() error {
	cfg := b.cfg
	gcfg := groupConfig(cfg)
	if err := gcfg.Validate(); err != nil {
		return fmt.Errorf("group coordinator: %w", err)
	}
	b.groups = group.NewService(group.Options{
		Config:   gcfg,
		Log:      b.replicas,
		Metadata: groupTopics{b.meta},
		NumPartitions: func() int32 {
			if t, ok := b.meta.Topic(metadata.ConsumerOffsetsTopic); ok {
				return int32(len(t.Partitions))
			}
			return cfg.OffsetsTopicNumPartitions
		},
		Logger:     b.log,
		Registerer: b.registry,
		LogEnd: func(topic string, partition int32) (int64, bool) {
			p := b.replicas.Partition(replica.TopicPartition{Topic: topic, Partition: partition})
			if p == nil {
				return 0, false
			}
			return p.Log.HighWatermark(), true
		},
	})
	elect := func(t metadata.Topic) {
		for _, p := range t.Partitions {
			if p.Leader == cfg.NodeID {
				b.groups.OnElection(p.Index, p.LeaderEpoch)
			}
		}
	}
	b.unsubscribeGroups = b.meta.Subscribe(func(c metadata.Change) {
		switch {
		case c.Topic.Name != metadata.ConsumerOffsetsTopic:
			switch c.Kind {
			case metadata.TopicCreated:
				b.groups.OnTopicsChanged([]string{c.Topic.Name}, nil, nil)
			case metadata.PartitionsCreated:
				b.groups.OnTopicsChanged(nil, []string{c.Topic.Name}, nil)
			case metadata.TopicDeleted:
				b.groups.OnTopicsChanged(nil, nil, []string{c.Topic.Name})
			}
		case c.Kind == metadata.TopicCreated || c.Kind == metadata.PartitionsCreated:
			elect(c.Topic)
		case c.Kind == metadata.TopicDeleted:
			for _, p := range c.Topic.Partitions {
				b.groups.OnResignation(p.Index, -1)
			}
		}
	})
	if t, ok := b.meta.Topic(metadata.ConsumerOffsetsTopic); ok {
		elect(t)
	}
	return nil
}

// groupConfig is the group coordinator's configuration from the broker's.
func groupConfig(c *config.KafkaConfig) group.Config {
	ms := func(key string) time.Duration { return time.Duration(c.GetInt(key)) * time.Millisecond }
	return group.Config{
		ClassicInitialRebalanceDelay:  c.GroupInitialRebalanceDelay,
		ClassicMinSessionTimeout:      c.GroupMinSessionTimeout,
		ClassicMaxSessionTimeout:      c.GroupMaxSessionTimeout,
		ClassicMaxSize:                int(c.GetInt("group.max.size")),
		ConsumerSessionTimeout:        ms("group.consumer.session.timeout.ms"),
		ConsumerMinSessionTimeout:     ms("group.consumer.min.session.timeout.ms"),
		ConsumerMaxSessionTimeout:     ms("group.consumer.max.session.timeout.ms"),
		ConsumerHeartbeatInterval:     ms("group.consumer.heartbeat.interval.ms"),
		ConsumerMinHeartbeatInterval:  ms("group.consumer.min.heartbeat.interval.ms"),
		ConsumerMaxHeartbeatInterval:  ms("group.consumer.max.heartbeat.interval.ms"),
		ConsumerMaxSize:               int(c.GetInt("group.consumer.max.size")),
		ConsumerAssignors:             c.GetList("group.consumer.assignors"),
		ConsumerMigrationPolicy:       strings.ToLower(c.GetString("group.consumer.migration.policy")),
		RebalanceProtocols:            c.GetList("group.coordinator.rebalance.protocols"),
		OffsetsRetention:              c.OffsetsRetention,
		OffsetsRetentionCheckInterval: time.Duration(c.GetLong("offsets.retention.check.interval.ms")) * time.Millisecond,
		OffsetMetadataMaxSize:         int(c.GetInt("offset.metadata.max.bytes")),
		OffsetCommitTimeout:           ms("offsets.commit.timeout.ms"),
	}
}

// groupTopics is the group coordinator's view of the topics, on the
// metadata store (the metadata image will replace it).
type groupTopics struct{ s *metadata.Store }

func topicInfo(t metadata.Topic) group.TopicInfo {
	return group.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))}
}

func (g groupTopics) TopicByName(name string) (group.TopicInfo, bool) {
	t, ok := g.s.Topic(name)
	return topicInfo(t), ok
}

func (g groupTopics) TopicByID(id [16]byte) (group.TopicInfo, bool) {
	t, ok := g.s.TopicByID(id)
	return topicInfo(t), ok
}

func (g groupTopics) Topics() []group.TopicInfo {
	ts := g.s.Topics()
	out := make([]group.TopicInfo, len(ts))
	for i, t := range ts {
		out[i] = topicInfo(t)
	}
	return out
}
