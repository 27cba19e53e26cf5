package quota

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// collector exports a manager's sensors as Kafka's JMX exporter names
// them: kafka.server:type=Produce,user=U,client-id=C byte-rate becomes
// kafka_server_produce_byte_rate{user="U",client_id="C"}. Each quota type
// has its rate (byte-rate; request-time for Request) and its
// throttle-time (the mean throttle in ms over metrics.num.samples windows
// of metrics.sample.window.ms, Kafka's defaults). There is a series only
// for the entities with a quota in effect, as Kafka creates these sensors
// only then; user or client_id is "" where the entity has none, as in
// Kafka's tags.
type collector struct {
	m              *ClientQuotaManager
	rate, throttle *prometheus.Desc
}

func newCollector(m *ClientQuotaManager) *collector {
	typ := strings.ToLower(m.cfg.Type.String())
	rateName, rateHelp := "byte_rate", "Tracking byte-rate per user/client-id"
	if m.cfg.Type == Request {
		rateName, rateHelp = "request_time", "Tracking request-time per user/client-id"
	}
	labels := []string{"user", "client_id"}
	return &collector{
		m:        m,
		rate:     prometheus.NewDesc("kafka_server_"+typ+"_"+rateName, rateHelp, labels, nil),
		throttle: prometheus.NewDesc("kafka_server_"+typ+"_throttle_time", "Tracking average throttle-time per user/client-id", labels, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rate
	ch <- c.throttle
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	now := m.cfg.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	if im := m.cfg.Image(); im != m.seen {
		m.reresolve(im)
	}
	for _, s := range m.sensors {
		ch <- prometheus.MustNewConstMetric(c.rate, prometheus.GaugeValue, s.rate.Measure(now), s.tags.user, s.tags.clientID)
		ch <- prometheus.MustNewConstMetric(c.throttle, prometheus.GaugeValue, s.throttle.measure(now), s.tags.user, s.tags.clientID)
	}
}
