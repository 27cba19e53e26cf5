package quota

import (
	"math"
	"sync"
	"time"

	"github.com/moldau/moldau/broker/metadata"
)

// MutationRateKey is the client quota key of the controller mutation rate.
const MutationRateKey = "controller_mutation_rate"

// AnonymousUser is the principal of a connection without authentication,
// as Kafka names it: user quotas for "ANONYMOUS" apply to it.
const AnonymousUser = "ANONYMOUS"

// MutationQuotas is Kafka's ControllerMutationQuotaManager.
type MutationQuotas struct {
	// quotas returns the client quotas in effect (the metadata image's).
	quotas func() map[metadata.QuotaEntity]map[string]float64
	now    func() time.Time
	// burst is the token bucket's size in seconds of the rate:
	// controller.quota.window.num × controller.quota.window.size.seconds.
	burst float64

	mu      sync.Mutex
	buckets map[bucketKey]*bucket
}

type bucketKey = clientKey

type bucket struct {
	tokens float64
	rate   float64
	last   time.Time
}

// NewMutationQuotas returns a manager reading the quotas from quotas;
// windows × windowSize is how long a client may burst at its rate (Kafka's
// defaults: 11 windows of 1 s).
func NewMutationQuotas(quotas func() map[metadata.QuotaEntity]map[string]float64, windows int, windowSize time.Duration, now func() time.Time) *MutationQuotas {
	if now == nil {
		now = time.Now
	}
	if windows <= 0 {
		windows = 11
	}
	if windowSize <= 0 {
		windowSize = time.Second
	}
	return &MutationQuotas{quotas: quotas, now: now, burst: float64(windows) * windowSize.Seconds(), buckets: map[bucketKey]*bucket{}}
}

// Quota is one request's use of the quota (Kafka's
// ControllerMutationQuota): Strict ones refuse what exceeds it
// (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+), permissive
// ones only report the throttle time.
type Quota struct {
	m        *MutationQuotas
	key      bucketKey
	rate     float64 // 0: no quota
	strict   bool
	throttle time.Duration
}

// For returns the quota of a client for one request.
func (m *MutationQuotas) For(user, clientID string, strict bool) *Quota {
	rate, key := m.lookup(user, clientID)
	return &Quota{m: m, key: key, rate: rate, strict: strict}
}

// Exceeded reports whether a strict quota is exhausted now: the client must
// wait ThrottleTime before mutating more.
func (q *Quota) Exceeded() bool {
	if q.rate <= 0 || !q.strict {
		return false
	}
	m := q.m
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.refill(q.key, q.rate)
	if b.tokens < 0 {
		q.throttle = time.Duration(-b.tokens / q.rate * float64(time.Second))
		return true
	}
	return false
}

// Record takes permits (partitions created or deleted). A strict quota
// that is already exhausted takes nothing and reports false; otherwise the
// permits are taken (the bucket may go into debt, as Kafka's TokenBucket
// does) and the throttle time updated.
func (q *Quota) Record(permits float64) bool {
	if q.rate <= 0 {
		return true
	}
	if q.Exceeded() {
		return false
	}
	m := q.m
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.refill(q.key, q.rate)
	b.tokens -= permits
	if b.tokens < 0 {
		q.throttle = time.Duration(-b.tokens / q.rate * float64(time.Second))
	}
	return true
}

// ThrottleTime is how long the client should wait (throttle_time_ms).
func (q *Quota) ThrottleTime() time.Duration { return q.throttle }

// refill brings a bucket up to now. m.mu held.
func (m *MutationQuotas) refill(key bucketKey, rate float64) *bucket {
	now := m.now()
	size := rate * m.burst
	b := m.buckets[key]
	if b == nil || b.rate != rate {
		b = &bucket{tokens: size, rate: rate, last: now}
		m.buckets[key] = b
		return b
	}
	b.tokens = math.Min(size, b.tokens+rate*now.Sub(b.last).Seconds())
	b.last = now
	return b
}

// lookup finds a client's rate in Kafka's order of precedence (resolve).
// The bucket is per the matched level's user and client id tags, so a
// default quota limits each client on its own.
func (m *MutationQuotas) lookup(user, clientID string) (float64, bucketKey) {
	v, tags, ok := resolve(m.quotas(), MutationRateKey, user, clientID)
	if !ok {
		return 0, bucketKey{}
	}
	return v, tags
}
