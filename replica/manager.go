package replica

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/log"
	"github.com/moldau/moldau/metadata"
	"github.com/moldau/moldau/purgatory"
)

// TopicPartition names a partition.
type TopicPartition = log.TopicPartition

// Partition is one partition hosted by this broker (Kafka's Partition).
type Partition struct {
	TopicPartition
	TopicID     metadata.TopicID
	LeaderEpoch int32
	Log         *log.Log

	stats *topicStats
}

// Config wires a Manager.
type Config struct {
	NodeID   int32
	Logs     *log.Manager
	Metadata *metadata.Store
	// ConfigFor resolves a topic's log config (topic overrides over
	// broker defaults).
	ConfigFor  func(t metadata.Topic) log.Config
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: no metrics
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

	unsubscribe func()
	closed      atomic.Bool
	// shuttingDown: delayed fetches answer now and new fetches do not
	// wait (see BeginShutdown).
	shuttingDown atomic.Bool
}

// NewManager creates the manager and a partition for every partition the
// cluster metadata assigns here, reusing logs loaded from disk, and deletes
// stray logs whose topic no longer exists (deleted while the broker was
// down, as Kafka's KRaft broker does).
func NewManager(cfg Config) (*Manager, error) {
	m := &Manager{
		cfg: cfg,
		log: cfg.Logger,
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	m.metrics = newBrokerTopicMetrics(cfg.Registerer)
	m.produceP = purgatory.New[TopicPartition]("Produce", purgatory.Options{Logger: m.log, Registerer: cfg.Registerer})
	m.fetchP = purgatory.New[TopicPartition]("Fetch", purgatory.Options{Logger: m.log, Registerer: cfg.Registerer})

	known := make(map[TopicPartition]bool)
	for _, t := range cfg.Metadata.Topics() {
		for _, p := range t.Partitions {
			tp := TopicPartition{Topic: t.Name, Partition: p.Index}
			known[tp] = true
			if err := m.makePartition(t, p); err != nil {
				m.Close()
				return nil, err
			}
		}
	}
	for _, l := range cfg.Logs.Logs() {
		tp := l.TopicPartition()
		if !known[tp] {
			m.log.Info("deleting stray log: its topic is not in the cluster metadata", "topic", tp.Topic, "partition", tp.Partition)
			if err := cfg.Logs.DeleteLog(tp); err != nil {
				m.log.Warn("deleting stray log failed", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			}
		}
	}
	m.unsubscribe = cfg.Metadata.Subscribe(m.onMetadataChange)
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
	if m.unsubscribe != nil {
		m.unsubscribe()
	}
	m.produceP.Close()
	m.fetchP.Close()
	m.metrics.unregister()
}

func (m *Manager) makePartition(t metadata.Topic, p metadata.Partition) error {
	tp := TopicPartition{Topic: t.Name, Partition: p.Index}
	l, err := m.cfg.Logs.GetOrCreateLog(tp, t.ID, m.cfg.ConfigFor(t))
	if err != nil {
		return fmt.Errorf("creating log for %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	// One node: the leader's high watermark is its log end.
	l.UpdateHighWatermark(l.LogEndOffset())
	m.partitions.Store(tp, &Partition{TopicPartition: tp, TopicID: t.ID, LeaderEpoch: p.LeaderEpoch, Log: l, stats: m.metrics.forTopic(t.Name)})
	return nil
}

func (m *Manager) onMetadataChange(c metadata.Change) {
	switch c.Kind {
	case metadata.TopicCreated, metadata.PartitionsCreated:
		for _, p := range c.Topic.Partitions {
			tp := TopicPartition{Topic: c.Topic.Name, Partition: p.Index}
			if m.Partition(tp) != nil {
				continue
			}
			if err := m.makePartition(c.Topic, p); err != nil {
				m.log.Error("creating partition", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			}
		}
	case metadata.TopicDeleted:
		var gone []TopicPartition
		for _, p := range c.Topic.Partitions {
			tp := TopicPartition{Topic: c.Topic.Name, Partition: p.Index}
			if _, ok := m.partitions.LoadAndDelete(tp); ok {
				gone = append(gone, tp)
			}
		}
		for _, tp := range gone {
			if err := m.cfg.Logs.DeleteLog(tp); err != nil {
				m.log.Error("deleting log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			}
			// Waiting fetches and produces on the partition
			// complete now, with UNKNOWN_TOPIC_OR_PARTITION.
			m.fetchP.CheckAndComplete(tp)
			m.produceP.CheckAndComplete(tp)
		}
		m.metrics.deleteTopic(c.Topic.Name)
	case metadata.TopicConfigChanged:
		cfg := m.cfg.ConfigFor(c.Topic)
		for _, p := range m.partitionsOf(c.Topic.Name) {
			p.Log.SetConfig(cfg)
		}
	case metadata.BrokerConfigChanged:
		for _, t := range m.cfg.Metadata.Topics() {
			cfg := m.cfg.ConfigFor(t)
			for _, p := range m.partitionsOf(t.Name) {
				p.Log.SetConfig(cfg)
			}
		}
	}
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
// code: UNKNOWN_TOPIC_OR_PARTITION if the cluster does not have it,
// NOT_LEADER_OR_FOLLOWER if it lives elsewhere (not yet on one node).
func (m *Manager) getPartition(tp TopicPartition) (*Partition, error) {
	if p := m.Partition(tp); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, tp.Topic, tp.Partition)
}

// checkLeaderEpoch validates a client's current leader epoch (KIP-320):
// -1 skips the check, an older epoch is FENCED_LEADER_EPOCH, a newer one
// UNKNOWN_LEADER_EPOCH.
func checkLeaderEpoch(p *Partition, epoch int32) error {
	switch {
	case epoch < 0 || epoch == p.LeaderEpoch:
		return nil
	case epoch < p.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	default:
		return kerr.UnknownLeaderEpoch
	}
}
