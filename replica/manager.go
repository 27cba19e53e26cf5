package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/routine"
	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/purgatory"
)

// TopicPartition names a partition.
type TopicPartition = log.TopicPartition

// Config wires a Manager.
type Config struct {
	NodeID int32
	Logs   *log.Manager
	// ConfigFor resolves a topic's log config (topic overrides over
	// broker defaults).
	ConfigFor func(t *metadata.Topic) log.Config
	// Image returns the current metadata image (the metadata cache):
	// a partition that exists there but is not led here answers
	// NOT_LEADER_OR_FOLLOWER rather than UNKNOWN_TOPIC_OR_PARTITION.
	Image      func() *metadata.Image
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: no metrics
	// RetryInterval is how often the creation of logs that failed is
	// tried again (see offline.go); 0: 2s.
	RetryInterval time.Duration

	// Replication. BrokerEpoch is this broker's epoch (registration);
	// AlterPartition sends an ISR change to the active controller;
	// NewFetcherClient gives a follower fetcher thread its own
	// connections to leaders. Nil AlterPartition or NewFetcherClient:
	// this broker neither changes ISRs nor follows (tests of one node).
	BrokerEpoch      func() int64
	AlterPartition   func(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
	NewFetcherClient func() BrokerClient
	Replication      ReplicationConfig
}

// ReplicationConfig are the replication settings (Kafka's replica.*).
type ReplicationConfig struct {
	NumFetchers           int           // num.replica.fetchers, 1
	FetchMaxBytes         int32         // replica.fetch.max.bytes, 1 MiB
	FetchMinBytes         int32         // replica.fetch.min.bytes, 1
	FetchWaitMax          time.Duration // replica.fetch.wait.max.ms, 500ms
	FetchBackoff          time.Duration // replica.fetch.backoff.ms, 1s
	FetchResponseMaxBytes int32         // replica.fetch.response.max.bytes, 10 MiB
	LagTimeMax            time.Duration // replica.lag.time.max.ms, 30s
	SocketTimeout         time.Duration // replica.socket.timeout.ms, 30s
	// QuotaWindows and QuotaWindowSize are replication.quota.window.num
	// (11) and replication.quota.window.size.seconds (1 s): the replication
	// throttles' rate is measured over them.
	QuotaWindows    int
	QuotaWindowSize time.Duration
	// SelectorClass is replica.selector.class: "" (consumers read from
	// leaders) or Kafka's RackAwareReplicaSelector (KIP-392).
	SelectorClass string
}

func (c ReplicationConfig) withDefaults() ReplicationConfig {
	if c.NumFetchers <= 0 {
		c.NumFetchers = 1
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = 1 << 20
	}
	if c.FetchMinBytes <= 0 {
		c.FetchMinBytes = 1
	}
	if c.FetchWaitMax <= 0 {
		c.FetchWaitMax = 500 * time.Millisecond
	}
	if c.FetchBackoff <= 0 {
		c.FetchBackoff = time.Second
	}
	if c.FetchResponseMaxBytes <= 0 {
		c.FetchResponseMaxBytes = 10 << 20
	}
	if c.LagTimeMax <= 0 {
		c.LagTimeMax = 30 * time.Second
	}
	if c.SocketTimeout <= 0 {
		c.SocketTimeout = 30 * time.Second
	}
	return c
}

// BrokerClient sends requests to other brokers (the broker's inter-broker
// channel); one request at a time per destination.
type BrokerClient interface {
	Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
	Close()
}

// Manager is the ReplicaManager.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	metrics *BrokerTopicMetrics

	// partitions maps TopicPartition to *Partition. A sync.Map: the set
	// changes only when topics come and go, and the produce and fetch
	// paths look partitions up without taking any lock.
	partitions sync.Map

	produceP *purgatory.Purgatory[TopicPartition]
	fetchP   *purgatory.Purgatory[TopicPartition]

	// stateMu serialises what changes the hosted partitions: metadata
	// updates and the retries of failed log creations (Kafka's
	// replicaStateChangeLock). Produce and fetch never take it.
	stateMu sync.Mutex
	// applied is the image of the last metadata update applied
	// (stateMu): DeleteStrayLogs decides from it, never from an image
	// read before the lock, which a newer update may have overtaken.
	applied *metadata.Image
	// caughtUp is set once DeleteStrayLogs ran: the broker has caught
	// up with the metadata log, so a topic missing from applied is
	// deleted, not unseen yet (the remote orphan sweep relies on it).
	caughtUp atomic.Bool
	// offline maps TopicPartition to *offlinePartition: partitions
	// assigned here whose log could not be created (offline.go).
	offline       sync.Map
	retryInterval time.Duration
	offlineGauge  prometheus.Collector
	bg            routine.Group
	// errLog rate-limits the lines of failed appends and reads.
	errLog errorLimiter

	fetchers *ReplicaFetcherManager
	repl     *replicationMetrics
	selector ReplicaSelector // nil: consumers read from leaders
	// leaderQuota and followerQuota are the replication throttles
	// (replication_quota.go).
	leaderQuota, followerQuota *ReplicationQuota

	// remote is tiered storage's state, nil unless StartRemoteLog ran
	// (remote_log_tasks.go).
	remote atomic.Pointer[remoteLog]

	closed atomic.Bool
	// shuttingDown: delayed fetches answer now and new fetches do not
	// wait (see BeginShutdown).
	shuttingDown atomic.Bool

	// afterLocalAppend, when set (by tests), runs between a produce's
	// local appends and the check of its acknowledgements.
	afterLocalAppend func()
}

// NewManager creates the manager. Partitions appear as the metadata
// publisher hands it deltas (OnMetadataUpdate); logs already loaded from
// disk are reused then. DeleteStrayLogs removes logs the metadata no
// longer has, once this broker has caught up.
func NewManager(cfg Config) (*Manager, error) {
	m := &Manager{
		cfg: cfg,
		log: cfg.Logger,
	}
	var err error
	if m.selector, err = NewReplicaSelector(cfg.Replication.SelectorClass); err != nil {
		return nil, err
	}
	m.leaderQuota = NewReplicationQuota(cfg.Replication.QuotaWindows, cfg.Replication.QuotaWindowSize, nil)
	m.followerQuota = NewReplicationQuota(cfg.Replication.QuotaWindows, cfg.Replication.QuotaWindowSize, nil)
	if m.log == nil {
		m.log = slog.Default()
	}
	m.metrics = newBrokerTopicMetrics(cfg.Registerer)
	m.produceP = purgatory.New[TopicPartition]("Produce", purgatory.Options{Logger: m.log, Registerer: cfg.Registerer})
	m.fetchP = purgatory.New[TopicPartition]("Fetch", purgatory.Options{Logger: m.log, Registerer: cfg.Registerer})
	if cfg.Registerer != nil {
		m.offlineGauge = newOfflineReplicaGauge(m)
		if err := cfg.Registerer.Register(m.offlineGauge); err != nil {
			return nil, fmt.Errorf("replica: registering metrics: %w", err)
		}
	}
	m.repl = newReplicationMetrics(m)
	if cfg.Registerer != nil {
		for _, c := range m.repl.collectors() {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("replica: registering metrics: %w", err)
			}
		}
	}
	m.cfg.Replication = cfg.Replication.withDefaults()
	m.fetchers = newReplicaFetcherManager(m)
	if cfg.AlterPartition != nil {
		m.bg.Every(m.cfg.Replication.LagTimeMax/2, m.maybeShrinkISRs)
	}
	m.retryInterval = cfg.RetryInterval
	if m.retryInterval <= 0 {
		m.retryInterval = defaultRetryInterval
	}
	m.bg.Every(m.retryInterval, m.retryOfflineLogs)
	cfg.Logs.OnDirFailure(m.handleLogDirFailure)
	return m, nil
}

// BeginShutdown answers every waiting fetch with what it has now and makes
// later fetches answer without waiting; acks=all produces still waiting
// answer NOT_LEADER_OR_FOLLOWER. The broker calls it before draining its
// connections, so a consumer's long poll does not hold shutdown up for
// fetch.max.wait.ms (on several nodes Kafka gets the same effect from
// controlled shutdown moving leadership away; on one node it closes the
// connections instead). Idempotent; Close implies it.
func (m *Manager) BeginShutdown() {
	if !m.shuttingDown.CompareAndSwap(false, true) {
		return
	}
	// An operation that enters TryCompleteElseWatch after the flag was
	// set sees it in its own tries; one already watched is tried here.
	fetches := m.fetchP.CheckAndCompleteAll()
	produces := m.produceP.CheckAndCompleteAll()
	if fetches+produces > 0 {
		m.log.Info("answered delayed operations for shutdown", "fetches", fetches, "produces", produces)
	}
}

// Close answers the delayed operations (BeginShutdown) and stops the
// purgatories. The logs are closed by their Manager.
func (m *Manager) Close() {
	if !m.closed.CompareAndSwap(false, true) {
		return
	}
	m.BeginShutdown()
	m.fetchers.close()
	m.bg.StopAndWait()
	m.produceP.Close()
	m.fetchP.Close()
	m.metrics.unregister()
	if rl := m.remote.Load(); rl != nil {
		rl.metrics.unregister()
		// After the readers (m.bg): no remote read keeps a stream now.
		rl.cfg.Manager.Close()
	}
	if m.offlineGauge != nil {
		m.cfg.Registerer.Unregister(m.offlineGauge)
	}
	if m.cfg.Registerer != nil {
		for _, c := range m.repl.collectors() {
			m.cfg.Registerer.Unregister(c)
		}
	}
}

// DescribeLogDirs reports every log dir with its partitions and sizes
// (Kafka's ReplicaManager.describeLogDirs).
func (m *Manager) DescribeLogDirs() []log.DirInfo { return m.cfg.Logs.DirInfos() }

// AlterReplicaLogDir moves tp's replica to the log dir at dir (Kafka's
// ReplicaManager.alterReplicaLogDirs for one partition; see
// log.Manager.AlterLogDir for the errors).
func (m *Manager) AlterReplicaLogDir(tp TopicPartition, dir string) error {
	return m.cfg.Logs.AlterLogDir(tp, dir)
}

// Partition returns the hosted partition, or nil.
func (m *Manager) Partition(tp TopicPartition) *Partition {
	if p, ok := m.partitions.Load(tp); ok {
		return p.(*Partition)
	}
	return nil
}

func (m *Manager) partitionsOf(topic string) []*Partition {
	var ps []*Partition
	m.partitions.Range(func(k, v any) bool {
		if k.(TopicPartition).Topic == topic {
			ps = append(ps, v.(*Partition))
		}
		return true
	})
	return ps
}

// getPartition returns the partition led here, or an error wrapping Kafka's
// code: KAFKA_STORAGE_ERROR if it is offline here (offline.go),
// UNKNOWN_TOPIC_OR_PARTITION if the cluster does not have it,
// NOT_LEADER_OR_FOLLOWER if it is led elsewhere or by no one. As Kafka's
// getPartitionOrError, a replica in a failed log dir answers
// KAFKA_STORAGE_ERROR whoever leads it (the controller moves its
// leadership away once the heartbeat names the dir).
func (m *Manager) getPartition(tp TopicPartition) (*Partition, error) {
	if p := m.Partition(tp); p != nil {
		if err := m.storageError(tp, p); err != nil {
			return nil, err
		}
		if p.IsLeader() {
			return p, nil
		}
	}
	if err := m.storageError(tp, nil); err != nil {
		return nil, err
	}
	if m.cfg.Image != nil {
		if t, ok := m.cfg.Image().Topic(tp.Topic); ok && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) {
			return nil, apierr.Errorf(kerr.NotLeaderForPartition, "Broker %d is not the leader of %s-%d (leader %d).", m.cfg.NodeID, tp.Topic, tp.Partition, t.Partitions[tp.Partition].Leader)
		}
	}
	return nil, fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, tp.Topic, tp.Partition)
}

// readablePartition is getPartition for a fetch: a consumer fetch with
// client metadata (Fetch v11+, KIP-392) may also read a partition this
// broker follows, up to its high watermark.
func (m *Manager) readablePartition(tp TopicPartition, params FetchParams) (*Partition, error) {
	p, err := m.getPartition(tp)
	if err == nil || params.fetchOnlyFromLeader() || !errors.Is(err, kerr.NotLeaderForPartition) {
		return p, err
	}
	if f := m.Partition(tp); f != nil && f.Log != nil && f.Log.Offline() == nil {
		return f, nil
	}
	return nil, err
}

// checkLeaderEpoch validates a client's current leader epoch (KIP-320):
// -1 skips the check, an older epoch is FENCED_LEADER_EPOCH, a newer one
// UNKNOWN_LEADER_EPOCH.
func checkLeaderEpoch(p *Partition, epoch int32) error {
	switch {
	case epoch < 0 || epoch == p.LeaderEpoch():
		return nil
	case epoch < p.LeaderEpoch():
		return kerr.FencedLeaderEpoch
	default:
		return kerr.UnknownLeaderEpoch
	}
}
