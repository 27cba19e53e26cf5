package replica

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/apierr"
	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log"
)

// Offline partitions (Kafka's HostedPartition.Offline).
//
// A partition hosted here is offline when its log cannot be used:
//
//   - its log dir failed (log.Log.Offline; see the log package's
//     dir_failure.go): the partition keeps its Partition, whose log
//     answers KAFKA_STORAGE_ERROR, until the broker restarts;
//   - creating its log failed (too many open files, a full disk, or its
//     dir is offline): it has no Partition but an offlinePartition, and
//     the creation is retried every Config.RetryInterval, so a partition
//     that failed for want of file descriptors or space comes online by
//     itself once they are back.
//
// Either way produce, fetch, ListOffsets and DeleteRecords answer
// KAFKA_STORAGE_ERROR (retriable: clients refresh their metadata and try
// again), the other partitions go on serving, and
// kafka_server_replicamanager_offlinereplicacount counts them. A failed
// creation is logged once per metadata update (how many failed, the
// first and its cause), and once more when retries bring partitions back.

// defaultRetryInterval is how often failed log creations are retried.
const defaultRetryInterval = 2 * time.Second

// offlinePartition is a partition assigned here whose log could not be
// created. It is immutable: a change stores a new one (under
// Manager.stateMu), so the produce and fetch paths read it without locks.
type offlinePartition struct {
	tp          TopicPartition
	topicID     uuid.UUID
	cfg         log.Config
	leaderEpoch int32
	leader      bool
	err         error
	since       time.Time
	attempts    int
}

func (m *Manager) offlinePartition(tp TopicPartition) *offlinePartition {
	if v, ok := m.offline.Load(tp); ok {
		return v.(*offlinePartition)
	}
	return nil
}

// storageError is the error clients get for a partition that is offline
// here, or nil.
func (m *Manager) storageError(tp TopicPartition, p *Partition) error {
	if p != nil {
		if err := p.Log.Offline(); err != nil {
			return apierr.Errorf(kerr.KafkaStorageError, "Partition %s is offline on broker %d: %v", tp, m.cfg.NodeID, err)
		}
		return nil
	}
	if op := m.offlinePartition(tp); op != nil && op.leader {
		return apierr.Errorf(kerr.KafkaStorageError, "Partition %s is offline on broker %d: its log could not be created (%v); the broker retries", tp, m.cfg.NodeID, op.err)
	}
	return nil
}

// creationFailures collects the failed log creations of one metadata
// update, to log them in one line.
type creationFailures struct {
	n     int
	first TopicPartition
	err   error
}

func (f *creationFailures) add(tp TopicPartition, err error) {
	if f.n == 0 {
		f.first, f.err = tp, err
	}
	f.n++
}

func (f *creationFailures) log(m *Manager) {
	if f.n == 0 {
		return
	}
	m.log.Error("creating logs failed: the partitions are offline here and answer KAFKA_STORAGE_ERROR until a retry succeeds",
		"partitions", f.n, "first", f.first.String(), "err", f.err, "retry_interval", m.retryInterval)
}

// markCreationFailed records a partition whose log could not be created;
// stateMu held.
func (m *Manager) markCreationFailed(t *metadata.Topic, p metadata.Partition, tp TopicPartition, err error) {
	m.offline.Store(tp, &offlinePartition{
		tp: tp, topicID: t.ID, cfg: m.cfg.ConfigFor(t), leaderEpoch: p.LeaderEpoch,
		leader: p.Leader == m.cfg.NodeID, err: err, since: time.Now(), attempts: 1,
	})
}

// updateOffline applies a metadata change to an offline partition;
// stateMu held.
func (m *Manager) updateOffline(op *offlinePartition, t *metadata.Topic, p metadata.Partition) {
	c := *op
	c.leaderEpoch, c.leader, c.cfg = p.LeaderEpoch, p.Leader == m.cfg.NodeID, m.cfg.ConfigFor(t)
	m.offline.Store(op.tp, &c)
}

// offlineState is the metadata's state of an offline partition whose log
// now exists: the image's, or, without one, this broker alone.
func (m *Manager) offlineState(op *offlinePartition) metadata.Partition {
	if m.cfg.Image != nil {
		if t, ok := m.cfg.Image().Topic(op.tp.Topic); ok && t.ID == op.topicID && int(op.tp.Partition) < len(t.Partitions) {
			return t.Partitions[op.tp.Partition]
		}
	}
	self := []int32{m.cfg.NodeID}
	leader := int32(metadata.NoLeader)
	if op.leader {
		leader = m.cfg.NodeID
	}
	return metadata.Partition{Index: op.tp.Partition, Leader: leader, LeaderEpoch: op.leaderEpoch, Replicas: self, ISR: self}
}

// retryOfflineLogs tries again to create the logs that failed, in
// partition order. A failure for want of a resource (file descriptors,
// space) ends the round: the next partitions would fail the same way.
func (m *Manager) retryOfflineLogs() {
	m.stateMu.Lock()
	defer m.stateMu.Unlock()
	var ops []*offlinePartition
	m.offline.Range(func(_, v any) bool {
		ops = append(ops, v.(*offlinePartition))
		return true
	})
	if len(ops) == 0 {
		return
	}
	slices.SortFunc(ops, func(a, b *offlinePartition) int {
		if c := strings.Compare(a.tp.Topic, b.tp.Topic); c != 0 {
			return c
		}
		return int(a.tp.Partition - b.tp.Partition)
	})
	var back []string
	for _, op := range ops {
		cfg := op.cfg
		if m.cfg.Image != nil {
			if t, ok := m.cfg.Image().Topic(op.tp.Topic); ok && t.ID == op.topicID {
				cfg = m.cfg.ConfigFor(t)
			}
		}
		l, err := m.cfg.Logs.GetOrCreateLog(op.tp, op.topicID, cfg)
		if err != nil {
			c := *op
			c.err, c.attempts = err, c.attempts+1
			m.offline.Store(op.tp, &c)
			if log.IsResourceExhausted(err) {
				break
			}
			continue
		}
		part := &Partition{TopicPartition: op.tp, TopicID: op.topicID, Log: l, stats: m.metrics.forTopic(op.tp.Topic)}
		part.leaderEpoch.Store(op.leaderEpoch)
		m.applyReplication(part, m.offlineState(op), op.leader, true)
		m.partitions.Store(op.tp, part)
		m.offline.Delete(op.tp)
		back = append(back, fmt.Sprintf("%s (after %d attempts, %s)", op.tp, op.attempts+1, time.Since(op.since).Round(time.Millisecond)))
	}
	if len(back) > 0 {
		remaining := 0
		m.offline.Range(func(_, _ any) bool { remaining++; return true })
		m.log.Info("created logs that had failed: the partitions are online", "partitions", len(back),
			"first", back[0], "still_offline", remaining)
	}
}

// handleLogDirFailure answers the fetches and produces waiting on the
// partitions of a log dir that failed (Kafka's markPartitionOffline
// completes their delayed operations): they see KAFKA_STORAGE_ERROR now.
func (m *Manager) handleLogDirFailure(dir string, partitions []TopicPartition) {
	if m.closed.Load() {
		return
	}
	m.log.Warn("stopped serving the partitions of a failed log dir: they answer KAFKA_STORAGE_ERROR until the broker restarts",
		"dir", dir, "partitions", len(partitions))
	for _, tp := range partitions {
		m.fetchP.CheckAndComplete(tp)
		m.produceP.CheckAndComplete(tp)
	}
}

// OfflinePartitions returns the partitions hosted here that are offline:
// their log could not be created, or its dir failed.
func (m *Manager) OfflinePartitions() []TopicPartition {
	var out []TopicPartition
	m.offline.Range(func(k, _ any) bool {
		out = append(out, k.(TopicPartition))
		return true
	})
	m.partitions.Range(func(k, v any) bool {
		if v.(*Partition).Log.Offline() != nil {
			out = append(out, k.(TopicPartition))
		}
		return true
	})
	return out
}

// IsOffline reports whether tp is hosted here and offline: its log could
// not be created, or its log dir failed. Metadata lists this broker in
// the partition's offline_replicas then. It takes no lock.
func (m *Manager) IsOffline(tp TopicPartition) bool {
	if v, ok := m.partitions.Load(tp); ok {
		return v.(*Partition).Log.Offline() != nil
	}
	_, ok := m.offline.Load(tp)
	return ok
}

func newOfflineReplicaGauge(m *Manager) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kafka_server_replicamanager_offlinereplicacount",
		Help: "Partitions hosted here that are offline: their log could not be created, or its log dir failed.",
	}, func() float64 { return float64(len(m.OfflinePartitions())) })
}

// errorLogInterval is how often an append or read failure is logged at
// most: a full disk fails every produce, and each need not be a line.
const errorLogInterval = 10 * time.Second

// errorLimiter lets one error line through per errorLogInterval and
// counts the others, which the next line reports.
type errorLimiter struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether to log now, and how many were suppressed since
// the last line.
func (l *errorLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < errorLogInterval {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}
