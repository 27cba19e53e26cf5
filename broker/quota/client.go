package quota

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/metadata"
)

// Client quota keys (Kafka's QuotaConfig), and Kafka's names of the quota
// types, which name their metrics (type=Produce, Fetch, Request).
const (
	ProducerByteRateKey  = "producer_byte_rate"
	ConsumerByteRateKey  = "consumer_byte_rate"
	RequestPercentageKey = "request_percentage"
)

// Type is a client quota type: what is measured and which key bounds it.
type Type int

const (
	Produce Type = iota // Produce request bytes in, producer_byte_rate
	Fetch               // consumer Fetch response bytes out, consumer_byte_rate
	Request             // request handler time in percent of a thread, request_percentage
)

func (t Type) String() string {
	return [...]string{"Produce", "Fetch", "Request"}[t]
}

// Key is the client quota key that bounds t.
func (t Type) Key() string {
	return [...]string{ProducerByteRateKey, ConsumerByteRateKey, RequestPercentageKey}[t]
}

// Config configures a ClientQuotaManager.
type Config struct {
	Type Type
	// Image returns the current metadata image, whose client quotas are
	// enforced.
	Image func() *metadata.Image
	// Samples and Window are quota.window.num and
	// quota.window.size.seconds (Kafka's defaults, 11 and 1 s, if zero).
	Samples int
	Window  time.Duration
	// MaxThrottle bounds the throttle time (0: unbounded). Kafka bounds
	// the request quota's by one window and leaves the byte rates'
	// unbounded.
	MaxThrottle time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Registerer, if set, gets the manager's metrics.
	Registerer prometheus.Registerer
}

// ClientQuotaManager is Kafka's ClientQuotaManager for one quota type: a
// windowed rate (a Kafka Sensor) per quota entity in effect, and the
// throttle time of a client that goes over its entity's quota. Safe for
// concurrent use.
type ClientQuotaManager struct {
	cfg      Config
	windowMs int64

	mu sync.Mutex
	// seen is the image clients was resolved from: a new image
	// re-resolves every client, so no quota outlives its record.
	seen *metadata.Image
	// clients resolves a connection's (user, client id) to the sensor
	// of the quota entity that applies to it (nil: no quota).
	clients map[clientKey]*client
	// sensors are per metric tags: the matched entity's user and client
	// id, "" where the entity has none (Kafka's quotaMetricTags).
	sensors   map[clientKey]*sensor
	lastPurge int64
}

type clientKey struct{ user, clientID string }

type client struct {
	s        *sensor
	lastUsed int64
}

type sensor struct {
	tags     clientKey
	bound    float64
	rate     *Rate
	throttle avgStat
}

// Kafka keeps the sensors of an idle client an hour
// (INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS); Moldau forgets idle clients
// after as long, looking once a minute.
const (
	inactiveExpiryMs = 3600 * 1000
	purgeEveryMs     = 60 * 1000
)

// Kafka's throttle-time sensor is an Avg under the metrics' own config:
// metrics.num.samples (2) windows of metrics.sample.window.ms (30 s).
const (
	throttleSamples  = 2
	throttleWindowMs = 30 * 1000
)

// NewClientQuotaManager returns a manager for cfg.Type.
func NewClientQuotaManager(cfg Config) *ClientQuotaManager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Samples <= 0 {
		cfg.Samples = 11
	}
	if cfg.Window <= 0 {
		cfg.Window = time.Second
	}
	m := &ClientQuotaManager{cfg: cfg, windowMs: cfg.Window.Milliseconds(),
		clients: map[clientKey]*client{}, sensors: map[clientKey]*sensor{}}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(newCollector(m))
	}
	return m
}

// Type is the manager's quota type.
func (m *ClientQuotaManager) Type() Type { return m.cfg.Type }

// UserOf is the quota user of a principal ("User:alice" is "alice"); an
// empty principal is ANONYMOUS.
func UserOf(principal string) string {
	if principal == "" {
		return AnonymousUser
	}
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// Record records value for the client and returns how long it must be
// throttled (Kafka's recordAndGetThrottleTimeMs): zero while its rate is
// within its quota, and always zero without a quota, when nothing is
// recorded.
func (m *ClientQuotaManager) Record(user, clientID string, value float64) time.Duration {
	if !m.anyQuota() {
		return 0
	}
	now := m.cfg.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorFor(user, clientID, now)
	if s == nil {
		return 0
	}
	s.rate.Record(value, now)
	observed := s.rate.Measure(now)
	ms := ThrottleTimeMs(observed, s.bound, s.rate.WindowMs(now))
	d := time.Duration(ms) * time.Millisecond
	if mt := m.cfg.MaxThrottle; mt > 0 && d > mt {
		d = mt
	}
	return d
}

// Unrecord takes back a value recorded at the same time (a fetch that is
// throttled returns no data: Kafka's unrecordQuotaSensor).
func (m *ClientQuotaManager) Unrecord(user, clientID string, value float64) {
	now := m.cfg.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sensorFor(user, clientID, now); s != nil {
		s.rate.Record(-value, now)
	}
}

// Throttled records that the client's channel is muted for d because of
// this quota (Kafka's throttle(), the throttle-time sensor).
func (m *ClientQuotaManager) Throttled(user, clientID string, d time.Duration) {
	if d <= 0 {
		return
	}
	now := m.cfg.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sensorFor(user, clientID, now); s != nil {
		s.throttle.record(float64(d.Milliseconds()), now)
	}
}

// MaxValueInWindow is the most that may be recorded at once without
// certainly being throttled (Kafka's maxValueInQuotaWindow: the quota
// over samples-1 windows); ok is false without a quota. A consumer's
// fetch is bounded by it.
func (m *ClientQuotaManager) MaxValueInWindow(user, clientID string) (v float64, ok bool) {
	if !m.anyQuota() {
		return 0, false
	}
	now := m.cfg.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensorFor(user, clientID, now)
	if s == nil {
		return 0, false
	}
	return s.bound * float64(m.cfg.Samples-1) * m.cfg.Window.Seconds(), true
}

// Quota is the bound that applies to the client, ok false if none.
func (m *ClientQuotaManager) Quota(user, clientID string) (float64, bool) {
	im := m.cfg.Image()
	if im == nil {
		return 0, false
	}
	b, _, ok := resolve(im.ClientQuotas, m.cfg.Type.Key(), user, clientID)
	return b, ok
}

// anyQuota is false when the image has no client quota at all: then
// nothing is recorded and no lock is taken (Kafka's quotasEnabled). The
// sensors of removed quotas are dropped when a scrape or a later record
// reads a newer image.
func (m *ClientQuotaManager) anyQuota() bool {
	im := m.cfg.Image()
	return im != nil && len(im.ClientQuotas) > 0
}

// sensorFor is the sensor of the client's quota, nil without one. m.mu
// held. One map lookup while the image stays the same.
func (m *ClientQuotaManager) sensorFor(user, clientID string, now int64) *sensor {
	if im := m.cfg.Image(); im != m.seen {
		m.reresolve(im)
	}
	if now-m.lastPurge >= purgeEveryMs {
		m.purge(now)
	}
	k := clientKey{user, clientID}
	c := m.clients[k]
	if c == nil {
		c = &client{s: m.resolveSensor(user, clientID)}
		m.clients[k] = c
	}
	c.lastUsed = now
	return c.s
}

// resolveSensor finds the sensor of the quota that applies to the
// client, creating it. m.mu held.
func (m *ClientQuotaManager) resolveSensor(user, clientID string) *sensor {
	var quotas map[metadata.QuotaEntity]map[string]float64
	if m.seen != nil {
		quotas = m.seen.ClientQuotas
	}
	bound, tags, ok := resolve(quotas, m.cfg.Type.Key(), user, clientID)
	if !ok {
		return nil
	}
	s := m.sensors[tags]
	if s == nil {
		s = &sensor{tags: tags, rate: NewRate(m.cfg.Samples, m.windowMs),
			throttle: avgStat{sampledStat{samples: throttleSamples, windowMs: throttleWindowMs}}}
		m.sensors[tags] = s
	}
	// A changed quota keeps the sensor's samples, as Kafka changes the
	// metric's config in place.
	s.bound = bound
	return s
}

// reresolve moves to a new image: every client is resolved again and the
// sensors no client uses any more (their quota is gone, or another level
// now applies) are dropped with their metrics. m.mu held.
func (m *ClientQuotaManager) reresolve(im *metadata.Image) {
	m.seen = im
	used := make(map[*sensor]bool, len(m.sensors))
	for k, c := range m.clients {
		c.s = m.resolveSensor(k.user, k.clientID)
		if c.s != nil {
			used[c.s] = true
		}
	}
	for tags, s := range m.sensors {
		if !used[s] {
			delete(m.sensors, tags)
		}
	}
}

// purge forgets the clients idle for an hour, and sensors no client uses.
// m.mu held.
func (m *ClientQuotaManager) purge(now int64) {
	m.lastPurge = now
	used := make(map[*sensor]bool, len(m.sensors))
	for k, c := range m.clients {
		if now-c.lastUsed >= inactiveExpiryMs {
			delete(m.clients, k)
		} else if c.s != nil {
			used[c.s] = true
		}
	}
	for tags, s := range m.sensors {
		if !used[s] {
			delete(m.sensors, tags)
		}
	}
}

// resolve finds the quota of key for a client in Kafka's order of
// precedence (ClientQuotaManager, KIP-55):
//
//	/config/users/<user>/clients/<client-id>
//	/config/users/<user>/clients/<default>
//	/config/users/<user>
//	/config/users/<default>/clients/<client-id>
//	/config/users/<default>/clients/<default>
//	/config/users/<default>
//	/config/clients/<client-id>
//	/config/clients/<default>
//
// A level whose value is not positive is passed over. tags are the metric tags of the sensor that measures it: the user where
// the matched entity has a user (named or default), the client id where it
// has a client id, so a default quota limits each user or client on its
// own.
func resolve(quotas map[metadata.QuotaEntity]map[string]float64, key, user, clientID string) (bound float64, tags clientKey, ok bool) {
	if len(quotas) == 0 {
		return 0, clientKey{}, false
	}
	name := func(n string) metadata.QuotaName { return metadata.QuotaName{Set: true, Name: n} }
	def := metadata.QuotaName{Set: true, Default: true}
	none := metadata.QuotaName{}
	levels := [...]struct {
		e    metadata.QuotaEntity
		tags clientKey
	}{
		{metadata.QuotaEntity{User: name(user), ClientID: name(clientID)}, clientKey{user, clientID}},
		{metadata.QuotaEntity{User: name(user), ClientID: def}, clientKey{user, clientID}},
		{metadata.QuotaEntity{User: name(user), ClientID: none}, clientKey{user, ""}},
		{metadata.QuotaEntity{User: def, ClientID: name(clientID)}, clientKey{user, clientID}},
		{metadata.QuotaEntity{User: def, ClientID: def}, clientKey{user, clientID}},
		{metadata.QuotaEntity{User: def, ClientID: none}, clientKey{user, ""}},
		{metadata.QuotaEntity{User: none, ClientID: name(clientID)}, clientKey{"", clientID}},
		{metadata.QuotaEntity{User: none, ClientID: def}, clientKey{"", clientID}},
	}
	for _, l := range levels {
		if v, found := quotas[l.e][key]; found && v > 0 {
			return v, l.tags, true
		}
	}
	return 0, clientKey{}, false
}
