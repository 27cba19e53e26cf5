package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/controller"
	"github.com/moldau/moldau/broker/memory"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/network"
	"github.com/moldau/moldau/broker/quota"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/broker/security"
	"github.com/moldau/moldau/broker/security/authorizer"
	"github.com/moldau/moldau/coordinator/group"
	"github.com/moldau/moldau/coordinator/share"
	"github.com/moldau/moldau/coordinator/txn"
	"github.com/moldau/moldau/kapi"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/log/remote"
	"github.com/moldau/moldau/replica"
	sharepart "github.com/moldau/moldau/replica/share"
)

// Options are what a Broker takes besides its configuration.
type Options struct {
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// Registry receives every metric of this broker; nil: a new registry
	// per broker, so several brokers run in one process.
	Registry *prometheus.Registry
	// MetadataLogFS is the file system of the metadata log
	// (__cluster_metadata-0, quorum-state, snapshots); nil: the OS. Tests
	// inject faults with a log.FaultFS.
	MetadataLogFS log.FS
	// LogFS is the file system of the partitions' logs in log.dirs; nil:
	// the OS. Tests fail a log dir with a log.FaultFS.
	LogFS log.FS
	// Dial dials the other nodes: the metadata quorum's peers, the
	// active controller, and brokers (replica fetchers, transaction
	// markers, AddPartitionsToTxn); nil: a net.Dialer. Tests cut links
	// between brokers with one. To an SSL listener the broker runs the
	// TLS handshake over the connection Dial returns.
	Dial network.DialFunc
	// AddScram are SCRAM credentials a brand-new cluster starts with, in
	// the form of Kafka's kafka-storage format --add-scram
	// ('SCRAM-SHA-256=[name=admin,password=secret]'): written with the
	// bootstrap metadata by the first active controller, ignored by a
	// cluster that has bootstrapped already. See security.go.
	AddScram []string
}

// Broker is one Moldau node: a broker and, with process.roles including
// controller, a voter of the metadata quorum and a controller. It wires the
// parts in Kafka's start-up order (storage; the metadata quorum, its
// loader and the controller; the replica manager and the other metadata
// publishers; request handlers; socket servers) and tears them down in
// reverse (Kafka's KafkaRaftServer with its BrokerServer and
// ControllerServer).
type Broker struct {
	cfg       *config.KafkaConfig
	opts      Options
	log       *slog.Logger
	registry  *prometheus.Registry
	clusterID string

	loader *metadata.Loader
	// tokens serves delegation token logins (tokenCache, security.go).
	tokens         *security.DelegationTokenCache
	tokenCacheOnce sync.Once
	quorum         *quorum
	controller     *controller.QuorumController
	channel        *network.ControllerChannel
	lifecycle      *lifecycleManager
	logs           *log.Manager
	replicas       *replica.Manager
	groups         *group.Service
	txn            *txn.Service
	producerIDs    *txn.ProducerIDManager
	// markerChannel carries the transaction coordinator's
	// WriteTxnMarkers, addPartitionsChannel the AddPartitionsToTxn of
	// partition leaders (network.InterBrokerChannel).
	markerChannel        *network.InterBrokerChannel
	addPartitionsChannel *network.InterBrokerChannel
	share                *share.Service              // the share coordinator
	sharePartitions      *sharepart.Manager          // ShareFetch and ShareAcknowledge on the partitions led here
	sharePersister       *statePersister             // share-partition state, through share here or over shareChannel
	shareChannel         *network.InterBrokerChannel // the persister's requests to other brokers' share coordinators
	handler              *kapi.Handler
	ctrlHandler          *kapi.ControllerHandler
	socket               *network.SocketServer // data plane: the broker listeners
	ctrlSocket           *network.SocketServer // control plane: the controller listeners
	// requestMemory is the data plane's request memory pool
	// (queued.max.request.bytes), shared with the logs' decompression.
	requestMemory *memory.Pool
	metrics       *network.Metrics
	httpSrv       *MetricsServer
	// remoteStorage is tiered storage's store, nil unless
	// remote.log.storage.system.enable (tiered.go).
	remoteStorage remote.RemoteStorageManager
	// remoteLogChannel carries the metadata manager's Produce requests
	// to the leaders of __remote_log_metadata partitions led elsewhere.
	remoteLogChannel *network.InterBrokerChannel

	// sslFactories are the SSL listeners' (served, or dialed by this
	// node), by name; controllerDial and interBrokerDial dial the
	// controller and inter-broker listeners of other nodes (TLS when
	// they are SSL). See security.go.
	sslFactories                    map[string]*security.SslFactory
	saslBuilders                    map[string]*security.SaslChannelBuilder
	controllerDial, interBrokerDial network.DialFunc
	// authorizer decides requests when authorizer.class.name names
	// the StandardAuthorizer; nil otherwise. See security.go.
	authorizer *authorizer.StandardAuthorizer
	// bootstrapScram are Options.AddScram's records.
	bootstrapScram []metadata.Record

	// unregister removes the broker's Reconfigurables from cfg.
	unregister []func()

	g        routine.Group
	ready    chan struct{} // closed once serving clients
	startErr error         // why start-up failed; read after ready or Close
	// fatal is closed, and fatalErr set, when a fatal error stops the
	// broker (see fatal.go); halting skips the controlled shutdown.
	fatal     chan struct{}
	fatalErr  atomic.Pointer[FatalError]
	halting   atomic.Bool
	closeOnce sync.Once
	closeErr  error
	// lifecycleRef is lifecycle for goroutines that may run before New
	// has made it (the replica fetchers ask for the broker epoch).
	lifecycleRef atomic.Pointer[lifecycleManager]
	// assignments reports the log dir of each replica to the controller
	// (KIP-858).
	assignments *assignmentsManager
}

// New builds a node: it checks or writes meta.properties in every log dir,
// loads the logs (running recovery after an unclean shutdown), opens the
// metadata log and binds the listeners, but serves nothing until Start.
func New(cfg *config.KafkaConfig, opts Options) (_ *Broker, err error) {
	b := &Broker{cfg: cfg, opts: opts, log: opts.Logger, registry: opts.Registry, ready: make(chan struct{}), fatal: make(chan struct{})}
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

	// The SSL listeners' stores first: a key store that does not load
	// stops start-up before anything is opened.
	if err := b.newSecurity(); err != nil {
		return nil, err
	}
	newClusterID := defaultClusterID(cfg.QuorumVoters)
	if newClusterID == "" && (!cfg.IsController() || len(cfg.QuorumBootstrapServers) > 0) && !hasMetaProperties(cfg.LogDirs) {
		// A new node that knows the quorum by its bootstrap servers
		// only (a broker, or a controller joining a dynamic quorum):
		// the controllers tell the cluster id.
		if newClusterID, err = b.discoverClusterID(); err != nil {
			return nil, err
		}
	}
	if b.clusterID, err = ensureMetaProperties(cfg.LogDirs, cfg.NodeID, newClusterID); err != nil {
		return nil, err
	}
	b.loader = metadata.NewLoader(b.log)
	b.requestMemory = memory.NewPool(cfg.QueuedMaxRequestBytes)
	configFor, err := b.newLogManager()
	if err != nil {
		return nil, err
	}
	b.replicas, err = replica.NewManager(replica.Config{
		NodeID:     cfg.NodeID,
		Logs:       b.logs,
		ConfigFor:  configFor,
		Image:      b.loader.Image,
		Logger:     b.log,
		Registerer: b.registry,
		// Replication: the channels exist once New has made them; the
		// replica manager uses them only once metadata arrives.
		BrokerEpoch:      b.brokerEpoch,
		AlterPartition:   b.sendAlterPartition,
		NewFetcherClient: b.newFetcherClient,
		Replication:      replicationConfig(cfg),
	})
	if err != nil {
		return nil, err
	}
	// The share coordinator first: the group coordinator initializes
	// share-group state through its persister.
	b.share = b.newShareCoordinator()
	if b.groups, err = b.newGroupCoordinator(); err != nil {
		return nil, err
	}
	if b.txn, err = b.newTxnCoordinator(); err != nil {
		return nil, err
	}
	b.sharePartitions = b.newSharePartitionManager()
	// Publishers, in Kafka's order: dynamic configs first, so that the
	// replica manager sees the broker defaults they set; the coordinators
	// after the replica manager, which hosts their partitions.
	// The assignments manager after the replica manager, which creates
	// the logs whose dirs it reports.
	b.assignments = newAssignmentsManager(cfg.NodeID, b.log, b.loader.Image, b.logs)
	publishers := []metadata.Publisher{&dynamicConfigPublisher{cfg: cfg, log: b.log}, b.replicas, b.assignments}
	publishers = append(publishers, b.groupCoordinatorPublishers()...)
	publishers = append(publishers, b.txnCoordinatorPublisher())
	for _, p := range append(publishers, b.shareCoordinatorPublishers()...) {
		if err := b.loader.InstallPublisher(p); err != nil {
			return nil, err
		}
	}
	if err := b.newMetadataQuorum(); err != nil {
		return nil, err
	}
	b.metrics = network.NewMetrics(b.registry)
	if err := b.newSocketServers(); err != nil {
		return nil, err
	}
	var endpoints []metadata.BrokerEndpoint
	if cfg.IsBroker() {
		endpoints = b.registrationEndpoints()
	}
	b.lifecycle = newLifecycleManager(cfg.NodeID, b.clusterID, b.log, b.channel, func() int64 { return b.loader.Image().Offset },
		cfg.BrokerHeartbeatInterval, endpoints, rack(cfg.RackID))
	dirIDs := logDirIDs(cfg.LogDirs, b.log)
	b.lifecycle.offlineDirs = dirIDsOf(dirIDs, b.logs.OfflineDirs)
	b.lifecycle.onlineDirs = dirIDsOf(dirIDs, b.logs.OnlineDirs)
	b.assignments.channel, b.assignments.dirIDs, b.assignments.epoch = b.channel, dirIDs, b.lifecycle.Epoch
	b.lifecycle.previousEpoch = b.logs.PreviousBrokerEpoch()
	b.lifecycleRef.Store(b.lifecycle)
	b.handler = b.newRequestHandler()
	if b.socket != nil {
		b.socket.SetHandler(b.handler)
	}
	// Tiered storage creates its metadata topic through the handler.
	if err := b.newRemoteLog(); err != nil {
		return nil, err
	}
	b.registerReconfigurables()
	if cfg.MetricsListener != "" {
		if b.httpSrv, err = ServeMetrics(cfg.MetricsListener, b.registry, b.log); err != nil {
			return nil, fmt.Errorf("metrics listener %s: %w", cfg.MetricsListener, err)
		}
	}
	return b, nil
}

// newLogManager loads the log dirs (Kafka's LogManager) and returns the
// log config of a topic: the broker's defaults, the topic's overrides and
// the request memory budget.
func (b *Broker) newLogManager() (func(*metadata.Topic) log.Config, error) {
	cfg := b.cfg
	logConfig := func(overrides map[string]string) log.Config {
		lc := cfg.LogConfig(overrides)
		if b.requestMemory.Bounded() {
			lc.Memory = b.requestMemory
		}
		return lc
	}
	configFor := func(t *metadata.Topic) log.Config { return logConfig(t.Configs) }
	var err error
	b.logs, err = log.NewManager(log.ManagerConfig{
		Dirs:   cfg.LogDirs,
		FS:     b.opts.LogFS,
		Logger: b.log,
		ConfigFor: func(topic string) log.Config {
			if t, ok := b.loader.Image().Topic(topic); ok {
				return configFor(t)
			}
			return logConfig(nil)
		},
		RecoveryThreadsPerDataDir:          cfg.NumRecoveryThreadsPerDataDir,
		RetentionCheckInterval:             cfg.LogRetentionCheckInterval,
		FlushSchedulerInterval:             cfg.LogFlushSchedulerInterval,
		FlushOffsetCheckpointInterval:      cfg.LogFlushOffsetCheckpointInterval,
		FlushStartOffsetCheckpointInterval: cfg.LogFlushStartOffsetCheckpointInterval,
		ProducerIDExpirationMs:             func() int64 { return int64(cfg.GetInt("producer.id.expiration.ms")) },
		ProducerIDExpirationCheckInterval:  cfg.ProducerIDExpirationCheckInterval,
		Registerer:                         b.registry,
		Cleaner:                            cfg.CleanerConfig(),
		Scrub:                              cfg.ScrubConfig(),
		AlterLogDirsBytesPerSecond:         func() int64 { return cfg.GetLong("replica.alter.log.dirs.io.max.bytes.per.second") },
	})
	if err != nil {
		return nil, fmt.Errorf("loading logs: %w", err)
	}
	if e := b.logDirsFatal(b.logs.OnlineDirs(), b.logs.OfflineDirs()); e != nil {
		return nil, fmt.Errorf("loading logs: %w", e)
	}
	return configFor, nil
}

// newRequestHandler is kapi's handler (KafkaApis) wired to the broker's
// parts.
func (b *Broker) newRequestHandler() *kapi.Handler {
	cfg := b.cfg
	return kapi.New(kapi.Config{
		NodeID:      cfg.NodeID,
		ClusterID:   b.clusterID,
		Logger:      b.log,
		Broker:      cfg,
		Metadata:    b.loader,
		Controller:  b.channel,
		Replicas:    b.replicas,
		BrokerEpoch: b.lifecycle.Epoch,
		Groups:      b.groups,
		// WriteTxnMarkers for __consumer_offsets: the group coordinator
		// writes the marker and applies the pending offsets.
		CompleteGroupTransaction: func(tp replica.TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool, timeout time.Duration, done func(error)) {
			b.groups.CompleteTransaction(tp.Partition, pid, epoch, coordinatorEpoch, commit, timeout, done)
		},
		DelegationTokenHMAC: b.delegationTokenHMAC(),
		MutationQuotas: quota.NewMutationQuotas(
			func() map[metadata.QuotaEntity]map[string]float64 { return b.loader.Image().ClientQuotas },
			int(cfg.GetInt("controller.quota.window.num")),
			time.Duration(cfg.GetInt("controller.quota.window.size.seconds"))*time.Second, nil),
		ClientQuotas:               b.newClientQuotas(),
		Txn:                        b.txn,
		Share:                      b.share,
		SharePartitions:            b.sharePartitions,
		VerifyTransactionalProduce: b.verifyProduce,
		Authorizer:                 b.authorizer,
		CountErrors:                b.metrics.RecordErrors,
	})
}

// newClientQuotas are the produce, fetch and request quota managers
// (Kafka's QuotaManagers), reading the quotas from the current image, with
// their sensors' metrics in the broker's registry. The request quota's
// throttle is bounded by one window, as Kafka's ClientRequestQuotaManager.
func (b *Broker) newClientQuotas() *kapi.ClientQuotas {
	cfg := b.cfg
	samples := int(cfg.GetInt("quota.window.num"))
	window := time.Duration(cfg.GetInt("quota.window.size.seconds")) * time.Second
	mk := func(t quota.Type, maxThrottle time.Duration) *quota.ClientQuotaManager {
		return quota.NewClientQuotaManager(quota.Config{
			Type: t, Image: b.loader.Image, Samples: samples, Window: window,
			MaxThrottle: maxThrottle, Registerer: b.registry,
		})
	}
	return &kapi.ClientQuotas{
		Produce: mk(quota.Produce, 0),
		Fetch:   mk(quota.Fetch, 0),
		Request: mk(quota.Request, window),
	}
}

// newMetadataQuorum opens the metadata log and, for a node with the
// controller role, the controller, with the controller plane's handler and
// the channel brokers reach the active controller through.
func (b *Broker) newMetadataQuorum() error {
	cfg := b.cfg
	metaDir := cfg.MetadataLogDir
	var err error
	if !cfg.IsController() {
		return b.newMetadataObserver()
	}
	b.controller = controller.New(controller.Config{
		NodeID:         cfg.NodeID,
		ClusterID:      b.clusterID,
		Broker:         cfg,
		Logger:         b.log,
		SessionTimeout: cfg.BrokerSessionTimeout,
		Bootstrap: func() ([]metadata.Record, error) {
			recs, err := migrateJSONStore(metaDir, b.log)
			return append(recs, b.bootstrapScram...), err
		},
		MaxReplicationFactor: 0, // replicated: no cap
		Registerer:           b.registry,
	})
	metaDirID, _ := metaDirectoryID(metaDir)
	b.quorum, err = openQuorum(quorumConfig{
		NodeID:    cfg.NodeID,
		Voters:    cfg.QuorumVoters,
		Bootstrap: cfg.QuorumBootstrapServers,
		Dir:       metaDir,
		Logger:    b.log,
		Registry:  b.registry,
		Config:    cfg,
		FS:        b.opts.MetadataLogFS,
		Dial:      b.controllerDial,
		ClusterID: b.clusterID,
		// The voter's directory id: metadata.log.dir's, as Kafka's
		// (zero if it has none: the voter then sends no UpdateRaftVoter).
		DirectoryID: metaDirID,
	}, b.loader, b.controller)
	if err != nil {
		return fmt.Errorf("opening the metadata log: %w", err)
	}
	b.controller.SetRaft(b.quorum)
	ctrlHandler := kapi.NewControllerHandler(cfg.NodeID, b.log, b.controller, b.quorum)
	ctrlHandler.SetAuthorizer(b.authorizer)
	ctrlHandler.SetCluster(b.clusterID, b.loader.Image, b.quorum.Leader)
	b.channel = network.NewControllerChannel(cfg.NodeID, b.log, cfg.QuorumVoters, b.quorum.Leader, ctrlHandler)
	b.channel.SetDialer(b.controllerDial)
	// Voters added since (KIP-853) are found in the voter set.
	b.channel.SetAddresses(b.quorum.node.ControllerAddress)
	b.ctrlHandler = ctrlHandler
	return nil
}

// newMetadataObserver opens the metadata log of a broker-only node: a
// metadata observer that follows the quorum (broker/raft's observer),
// with the channel to the active controller over the network.
func (b *Broker) newMetadataObserver() error {
	cfg := b.cfg
	var err error
	b.quorum, err = openQuorum(quorumConfig{
		NodeID:    cfg.NodeID,
		Voters:    cfg.QuorumVoters,
		Observer:  true,
		Bootstrap: cfg.QuorumBootstrapServers,
		Dir:       cfg.MetadataLogDir,
		Logger:    b.log,
		Registry:  b.registry,
		Config:    cfg,
		FS:        b.opts.MetadataLogFS,
		Dial:      b.controllerDial,
	}, b.loader, nil)
	if err != nil {
		return fmt.Errorf("opening the metadata log: %w", err)
	}
	b.channel = network.NewControllerChannel(cfg.NodeID, b.log, cfg.QuorumVoters, b.quorum.Leader, nil)
	b.channel.SetDialer(b.controllerDial)
	b.channel.SetAddresses(b.quorum.node.ControllerAddress)
	return nil
}

func (b *Broker) newSocketServers() error {
	cfg := b.cfg
	common := func(ls []config.Listener, h network.RequestHandler) network.Config {
		listeners := make([]network.ListenerConfig, len(ls))
		for i, l := range ls {
			listeners[i] = network.ListenerConfig{Name: l.Name, Host: l.Host, Port: l.Port, ChannelBuilder: b.channelBuilder(l.Name)}
		}
		return network.Config{
			Listeners:                listeners,
			NumNetworkThreads:        int(cfg.GetInt("num.network.threads")),
			NumIOThreads:             int(cfg.GetInt("num.io.threads")),
			QueuedMaxRequests:        cfg.QueuedMaxRequests,
			SocketRequestMaxBytes:    cfg.SocketRequestMaxBytes,
			SocketSendBufferBytes:    cfg.SocketSendBufferBytes,
			SocketReceiveBufferBytes: cfg.SocketReceiveBufferBytes,
			ConnectionsMaxIdle:       cfg.ConnectionsMaxIdle,
			QueuedMaxRequestBytes:    cfg.QueuedMaxRequestBytes,
			RequestReceiveTimeout:    cfg.RequestReceiveTimeout(),
			Handler:                  h,
			Logger:                   b.log,
			Metrics:                  b.metrics,
		}
	}
	quotas, err := cfg.ConnectionQuotas()
	if err != nil {
		return err
	}
	if len(cfg.ControllerListeners) > 0 {
		// The controller plane has its own pool, as Kafka's
		// ControllerServer has its own SocketServer, so that clients
		// filling the data plane's never hold the quorum up; its
		// listeners have no connection quotas.
		c := common(cfg.ControllerListeners, b.ctrlHandler)
		c.Metrics = nil // the data plane's metrics are the broker's
		c.PrivateAPIKeys = []int16{b.quorum.TransportKey()}
		if b.ctrlSocket, err = network.NewSocketServer(c); err != nil {
			return err
		}
	}
	if len(cfg.Listeners) == 0 {
		return nil // a controller-only node: no data plane
	}
	// The handler is set once kapi exists; nothing is served before Start.
	data := common(cfg.Listeners, placeholderHandler{})
	data.MemoryPool = b.requestMemory
	data.ConnectionQuotas = &quotas
	data.ProtectedListener = cfg.InterBrokerListenerName
	if b.sharePartitions != nil {
		// A share session ends with the connection that opened it.
		data.DisconnectListeners = append(data.DisconnectListeners, b.sharePartitions.Sessions())
	}
	b.socket, err = network.NewSocketServer(data)
	return err
}

// registerReconfigurables makes the socket server follow the dynamic
// configs it applies: num.io.threads and num.network.threads (set with
// AlterConfigs, persisted in the metadata: the server started with the
// values in effect), the connection quotas and the request receive
// timeout.
func (b *Broker) registerReconfigurables() {
	b.unregister = append(b.unregister, b.cfg.AddReconfigurable(config.ReconfigurableFunc{
		Keys: []string{"num.io.threads", "num.network.threads"},
		Apply: func(old, new map[string]any) {
			if b.socket == nil {
				return
			}
			if n, _ := new["num.io.threads"].(int32); n != old["num.io.threads"] {
				b.socket.ResizeHandlers(int(n))
			}
			if n, _ := new["num.network.threads"].(int32); n != old["num.network.threads"] {
				b.socket.ResizeProcessors(int(n))
			}
		},
	}))
	b.unregister = append(b.unregister, b.cfg.AddReconfigurable(b.socketLimitsReconfigurable()))
	// Replication throttles (Kafka's ReplicationQuotaManager is a
	// dynamic broker config's listener).
	throttles := []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
	b.replicas.SetReplicationThrottles(b.cfg.GetLong(throttles[0]), b.cfg.GetLong(throttles[1]))
	b.unregister = append(b.unregister, b.cfg.AddReconfigurable(config.ReconfigurableFunc{
		Keys: throttles,
		Apply: func(_, new map[string]any) {
			l, _ := new[throttles[0]].(int64)
			f, _ := new[throttles[1]].(int64)
			b.replicas.SetReplicationThrottles(l, f)
		},
	}))
	for _, r := range b.sslReconfigurables() {
		b.unregister = append(b.unregister, b.cfg.AddReconfigurable(r))
	}
}

// socketLimitsReconfigurable applies the connection quotas and the request
// receive timeout at run time (Kafka's SocketServer is a
// BrokerReconfigurable for the quotas; the listener forms are each
// listener's ListenerReconfigurable).
func (b *Broker) socketLimitsReconfigurable() config.Reconfigurable {
	names := b.cfg.BrokerListenerNames()
	keys := append(config.ConnectionQuotaKeys(names), config.RequestReceiveTimeoutKey)
	return config.ReconfigurableFunc{
		Keys: keys,
		Validate: func(values map[string]any) error {
			_, err := config.ConnectionQuotasFrom(values, names)
			return err
		},
		Apply: func(old, values map[string]any) {
			if b.socket == nil {
				return
			}
			oq, _ := config.ConnectionQuotasFrom(old, names)
			if q, err := config.ConnectionQuotasFrom(values, names); err == nil && !reflect.DeepEqual(q, oq) {
				b.socket.SetConnectionQuotas(q)
			}
			d := config.RequestReceiveTimeoutFrom(values[config.RequestReceiveTimeoutKey])
			if d != config.RequestReceiveTimeoutFrom(old[config.RequestReceiveTimeoutKey]) {
				b.log.Info("request receive timeout updated", config.RequestReceiveTimeoutKey, d.Milliseconds())
				b.socket.SetRequestReceiveTimeout(d)
				if b.ctrlSocket != nil {
					b.ctrlSocket.SetRequestReceiveTimeout(d)
				}
			}
		},
	}
}

// placeholderHandler stands in until New sets the real handler.
type placeholderHandler struct{}

func (placeholderHandler) Handle(_ context.Context, _ *kapi.Request, respond func(*kapi.Response)) {
	respond(&kapi.Response{Close: true, CloseReason: "broker not ready"})
}

func rack(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Start starts the node: the controller plane and the metadata quorum at
// once; the broker listeners only once the controller has unfenced this
// broker (its metadata has caught up), as Kafka's broker waits for its
// initial catch-up. Ready tells when clients are served.
func (b *Broker) Start() {
	// A replica moved between log dirs: the controller learns its new dir
	// (AssignReplicasToDirs) without waiting for a metadata change.
	if b.assignments != nil {
		b.logs.OnLogMoved(func(log.TopicPartition) { b.assignments.poke() })
	}
	b.logs.Start()
	// A dir that fails from now on is reported; one that failed since
	// New is checked here.
	b.logs.OnDirOffline(b.onLogDirOffline)
	if e := b.logDirsFatal(b.logs.OnlineDirs(), b.logs.OfflineDirs()); e != nil {
		b.halt(e)
		return
	}
	if b.ctrlSocket != nil {
		b.ctrlSocket.Start()
		for _, l := range b.cfg.ControllerListeners {
			b.log.Info("listening (controller)", "listener", l.Name, "addr", b.ctrlSocket.Addr(l.Name).String())
		}
		// The endpoints this voter checks its voter-set entry against.
		b.quorum.SetLocalEndpoints(b.advertisedControllerListeners())
	}
	if b.controller != nil {
		b.controller.Start()
	}
	if err := b.quorum.Start(); err != nil {
		b.failStart(fmt.Errorf("starting the metadata quorum: %w", err))
		return
	}
	b.g.Go(b.watchQuorum)
	if b.cfg.IsController() {
		b.g.Go(b.registerController)
	}
	if !b.cfg.IsBroker() {
		// A controller-only node: no broker registration, no data
		// plane; it serves once the controller plane listens.
		if b.httpSrv != nil {
			b.log.Info("serving /metrics and /debug/pprof", "addr", b.httpSrv.Addr().String())
		}
		close(b.ready)
		return
	}
	b.lifecycle.Start()
	b.assignments.Start()
	b.g.Go(func(done <-chan struct{}) {
		select {
		case <-b.lifecycle.unfenced:
		case <-done:
			return
		}
		b.replicas.DeleteStrayLogs()
		if b.loader.Image().Features[metadata.MetadataVersionFeature] > 0 {
			// The bootstrap batch, with any JSON-store upgrade in it,
			// is committed: the old file has served.
			if err := retireJSONStore(b.cfg.MetadataLogDir); err != nil {
				b.log.Warn("renaming the upgraded JSON metadata failed", "err", err)
			}
		}
		b.socket.Start()
		for _, l := range b.cfg.Listeners {
			b.log.Info("listening", "listener", l.Name, "addr", b.socket.Addr(l.Name).String())
		}
		if b.httpSrv != nil {
			b.log.Info("serving /metrics and /debug/pprof", "addr", b.httpSrv.Addr().String())
		}
		close(b.ready)
	})
}

func (b *Broker) failStart(err error) {
	b.startErr = err
	b.log.Error("start-up failed", "err", err)
	close(b.ready)
}

// Ready returns a channel closed once the broker serves clients, or
// start-up failed (then WaitReady returns the error).
func (b *Broker) Ready() <-chan struct{} { return b.ready }

// WaitReady waits until the broker serves clients; it fails if start-up
// failed or a fatal error stopped the broker.
func (b *Broker) WaitReady(ctx context.Context) error {
	select {
	case <-b.ready:
		if err := b.FatalErr(); err != nil {
			return err
		}
		return b.startErr
	case <-b.fatal:
		return b.FatalErr()
	case <-ctx.Done():
		return fmt.Errorf("waiting for the broker to join the cluster: %w", ctx.Err())
	}
}

// Addr returns the bound address of a listener ("" means the first broker
// listener); controller listeners too.
func (b *Broker) Addr(listener string) net.Addr {
	if listener == "" && len(b.cfg.Listeners) > 0 {
		listener = b.cfg.Listeners[0].Name
	} else if listener == "" {
		listener = b.cfg.ControllerListeners[0].Name
	}
	if b.socket != nil {
		if a := b.socket.Addr(listener); a != nil {
			return a
		}
	}
	if b.ctrlSocket != nil {
		return b.ctrlSocket.Addr(listener)
	}
	return nil
}

// MetricsAddr returns the metrics HTTP listener's address, or nil.
func (b *Broker) MetricsAddr() net.Addr {
	if b.httpSrv == nil {
		return nil
	}
	return b.httpSrv.Addr()
}

// NumIOThreads and NumNetworkThreads are the handler pool's and each
// broker listener's current sizes (they follow num.io.threads and
// num.network.threads at run time).
func (b *Broker) NumIOThreads() int {
	if b.socket == nil {
		return b.ctrlSocket.NumIOThreads()
	}
	return b.socket.NumIOThreads()
}
func (b *Broker) NumNetworkThreads() int {
	if b.socket == nil {
		return b.ctrlSocket.NumNetworkThreads()
	}
	return b.socket.NumNetworkThreads()
}

// ClusterID returns the cluster ID from meta.properties.
func (b *Broker) ClusterID() string { return b.clusterID }

// Registry returns the broker's metrics registry.
func (b *Broker) Registry() *prometheus.Registry { return b.registry }

// Metadata returns the newest metadata image this node has applied.
func (b *Broker) Metadata() *metadata.Image { return b.loader.Image() }

// ActiveController is the id of the active controller, -1 if unknown.
func (b *Broker) ActiveController() int32 { return b.quorum.Leader() }

// registrationEndpoints are the advertised listeners as the broker
// registers them, with an ephemeral port replaced by the bound one.
func (b *Broker) registrationEndpoints() []metadata.BrokerEndpoint {
	adv := b.cfg.Advertised(func(listener string) int {
		if a, ok := b.socket.Addr(listener).(*net.TCPAddr); ok && a != nil {
			return a.Port
		}
		return 0
	})
	eps := make([]metadata.BrokerEndpoint, 0, len(adv))
	for _, l := range adv {
		eps = append(eps, metadata.BrokerEndpoint{Name: l.Name, Host: l.Host, Port: uint16(l.Port), SecurityProtocol: securityProtocolIDs[b.cfg.SecurityProtocol(l.Name)]})
	}
	return eps
}

// controlledShutdownTimeout bounds how long Close waits for the controller
// to move this broker's leaderships.
const controlledShutdownTimeout = 5 * time.Second

// Close shuts down in Kafka's order: controlled shutdown (the controller
// moves leaderships away), stop accepting clients, answer the fetches
// waiting in the purgatory (a consumer's long poll would otherwise hold
// the drain up for its fetch.max.wait.ms) and let in-flight requests
// finish, close the logs cleanly (so the next start skips recovery), then
// the controller and the metadata quorum. Idempotent.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		var errs []error
		for _, f := range b.unregister {
			f()
		}
		if b.socket != nil {
			b.socket.StopAccepting()
		}
		if b.assignments != nil {
			b.assignments.Close()
		}
		if b.halting.Load() {
			// Halted: no controlled shutdown, and requests waiting for
			// a controller that may be gone (this node's, if the
			// metadata quorum failed) are answered now.
			if b.lifecycle != nil {
				b.lifecycle.Close()
			}
			if b.channel != nil {
				b.channel.Close()
			}
		} else if b.lifecycle != nil {
			ctx, cancel := context.WithTimeout(context.Background(), controlledShutdownTimeout)
			b.lifecycle.ControlledShutdown(ctx)
			cancel()
		}
		b.g.StopAndWait()
		if b.socket != nil {
			if b.replicas != nil {
				b.replicas.BeginShutdown()
			}
			if b.sharePartitions != nil {
				b.sharePartitions.BeginShutdown()
			}
			// The group coordinator unloads before the drain: the
			// JoinGroup and SyncGroup requests it parks (up to a
			// rebalance timeout) are answered NOT_COORDINATOR instead
			// of holding the drain to its timeout.
			if b.groups != nil {
				b.groups.Close()
			}
			errs = append(errs, b.socket.Close())
		}
		if b.handler != nil {
			b.handler.Close()
		}
		if b.httpSrv != nil {
			errs = append(errs, b.httpSrv.Close())
		}
		// The share coordinator and its persister (whose calls in
		// flight stop waiting), the transaction coordinator, then what
		// they send through (the group coordinator closed before the
		// drain).
		if b.sharePartitions != nil {
			b.sharePartitions.Close()
		}
		if b.sharePersister != nil {
			b.sharePersister.close()
		}
		if b.share != nil {
			b.share.Close()
		}
		if b.txn != nil {
			b.txn.Close()
		}
		if b.producerIDs != nil {
			b.producerIDs.Close()
		}
		for _, c := range []*network.InterBrokerChannel{b.shareChannel, b.markerChannel, b.addPartitionsChannel, b.remoteLogChannel} {
			if c != nil {
				c.Close()
			}
		}
		if b.groups != nil && b.socket == nil {
			b.groups.Close()
		}
		if b.replicas != nil {
			b.replicas.Close()
		}
		if b.remoteStorage != nil {
			errs = append(errs, b.remoteStorage.Close())
		}
		if b.logs != nil {
			if b.lifecycle != nil {
				b.logs.SetBrokerEpoch(b.lifecycle.Epoch())
			}
			errs = append(errs, b.logs.Close())
		}
		if b.channel != nil {
			b.channel.Close()
		}
		if b.ctrlSocket != nil {
			b.ctrlSocket.StopAccepting()
			errs = append(errs, b.ctrlSocket.Close())
		}
		if b.controller != nil {
			b.controller.Close()
		}
		if b.quorum != nil {
			errs = append(errs, b.quorum.Close())
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

// defaultClusterID is the cluster id a new node writes to meta.properties:
// random for a single node; for a quorum, derived from the voters, so that
// nodes started from the same controller.quorum.voters agree without a
// separate format step (Kafka's kafka-storage format --cluster-id).
func defaultClusterID(voters map[int32]string) string {
	if len(voters) == 0 {
		return ""
	}
	ids := make([]int, 0, len(voters))
	for id := range voters {
		ids = append(ids, int(id))
	}
	var s string
	for _, id := range sortedInts(ids) {
		s += strconv.Itoa(id) + "@" + voters[int32(id)] + ","
	}
	return clusterIDFrom(s)
}
