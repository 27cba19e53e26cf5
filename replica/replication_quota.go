package replica

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Replication throttles (Kafka's ReplicationQuotaManager, KIP-73): a
// broker's leader.replication.throttled.rate bounds what it sends to
// followers, and follower.replication.throttled.rate what it fetches as
// follower, in bytes per second, for the partitions a topic's
// leader.replication.throttled.replicas and
// follower.replication.throttled.replicas name with this broker
// ("partition:broker" entries, or "*" for every replica). Only replicas
// outside the ISR are throttled (so an in-sync follower never falls out
// because of a throttle): a throttled partition gets no data while the
// rate, measured over replication.quota.window.num windows of
// replication.quota.window.size.seconds, is above the bound, and its bytes
// count towards it.

// ReplicationQuota is one direction's bound and measured rate (Kafka's
// ReplicationQuotaManager with its sampled Rate).
type ReplicationQuota struct {
	bound  atomic.Int64 // bytes/s; math.MaxInt64: unthrottled
	now    func() time.Time
	window time.Duration
	n      int

	mu      sync.Mutex
	samples []quotaSample // at most n, oldest first
}

type quotaSample struct {
	start time.Time
	bytes int64
}

// NewReplicationQuota returns an unthrottled quota measured over windows
// windows of size each.
func NewReplicationQuota(windows int, size time.Duration, now func() time.Time) *ReplicationQuota {
	if windows < 2 {
		windows = 11
	}
	if size <= 0 {
		size = time.Second
	}
	if now == nil {
		now = time.Now
	}
	q := &ReplicationQuota{now: now, window: size, n: windows}
	q.bound.Store(math.MaxInt64)
	return q
}

// SetBound sets the bound in bytes/s (<= 0 or MaxInt64: unthrottled).
func (q *ReplicationQuota) SetBound(bytesPerSec int64) {
	if bytesPerSec <= 0 {
		bytesPerSec = math.MaxInt64
	}
	q.bound.Store(bytesPerSec)
}

// Bounded reports whether a bound is set.
func (q *ReplicationQuota) Bounded() bool { return q.bound.Load() != math.MaxInt64 }

// Record counts bytes sent (or fetched) for throttled partitions.
func (q *ReplicationQuota) Record(bytes int64) {
	if bytes <= 0 || !q.Bounded() {
		return
	}
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expireLocked(now)
	if k := len(q.samples); k > 0 && now.Sub(q.samples[k-1].start) < q.window {
		q.samples[k-1].bytes += bytes
		return
	}
	q.samples = append(q.samples, quotaSample{start: now, bytes: bytes})
	if len(q.samples) > q.n {
		q.samples = q.samples[1:]
	}
}

// Exceeded reports whether the measured rate is above the bound (Kafka's
// isQuotaExceeded).
func (q *ReplicationQuota) Exceeded() bool {
	b := q.bound.Load()
	return b != math.MaxInt64 && q.Rate() > float64(b)
}

// Rate is Kafka's Rate.measure: the bytes of the windows kept over the
// time they span, counted as at least n-1 windows.
func (q *ReplicationQuota) Rate() float64 {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.expireLocked(now)
	if len(q.samples) == 0 {
		return 0
	}
	var total int64
	for _, s := range q.samples {
		total += s.bytes
	}
	elapsed := max(now.Sub(q.samples[0].start), time.Duration(q.n-1)*q.window)
	return float64(total) / elapsed.Seconds()
}

func (q *ReplicationQuota) expireLocked(now time.Time) {
	keep := time.Duration(q.n) * q.window
	i := 0
	for i < len(q.samples) && now.Sub(q.samples[i].start) > keep {
		i++
	}
	q.samples = q.samples[i:]
}

// throttledReplica reports whether a topic's *.replication.throttled.replicas
// value names partition on broker: "*", or a "partition:broker" entry.
func throttledReplica(list string, partition, broker int32) bool {
	list = strings.TrimSpace(list)
	if list == "" {
		return false
	}
	want := strconv.Itoa(int(partition)) + ":" + strconv.Itoa(int(broker))
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "*" || e == want {
			return true
		}
	}
	return false
}

// SetReplicationThrottles sets leader.replication.throttled.rate and
// follower.replication.throttled.rate (bytes/s; <= 0: none).
func (m *Manager) SetReplicationThrottles(leader, follower int64) {
	m.leaderQuota.SetBound(leader)
	m.followerQuota.SetBound(follower)
}

// applyThrottledReplicas marks a partition throttled on either side from
// its topic's configs.
func (m *Manager) applyThrottledReplicas(p *Partition, configs map[string]string) {
	p.leaderThrottled.Store(throttledReplica(configs["leader.replication.throttled.replicas"], p.Partition, m.cfg.NodeID))
	p.followerThrottled.Store(throttledReplica(configs["follower.replication.throttled.replicas"], p.Partition, m.cfg.NodeID))
}

// leaderThrottledReplica is Kafka's shouldLeaderThrottle less the rate
// check: the partition is leader-throttled here, a bound is set, and the
// follower is outside the ISR.
func (m *Manager) leaderThrottledReplica(p *Partition, follower int32) bool {
	if !p.leaderThrottled.Load() || !m.leaderQuota.Bounded() {
		return false
	}
	p.mu.RLock()
	inSync := slices.Contains(p.isr, follower)
	p.mu.RUnlock()
	return !inSync
}

// followerThrottled reports whether this broker, following p, is throttled
// for it: follower-throttled, not in the ISR.
func (m *Manager) followerThrottled(p *Partition) bool {
	if !p.followerThrottled.Load() || !m.followerQuota.Bounded() {
		return false
	}
	p.mu.RLock()
	inSync := slices.Contains(p.isr, m.cfg.NodeID)
	p.mu.RUnlock()
	return !inSync
}
