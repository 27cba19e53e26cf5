package replica

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// replicationMetrics are the ReplicaManager's replication gauges with the
// names Kafka's JMX exporter gives them, computed from the partitions at
// each scrape (so they cost nothing on the produce and fetch paths), and
// the ISR change counters.
type replicationMetrics struct {
	m *Manager

	isrShrinks, isrExpands prometheus.Counter

	partitionCount, leaderCount, underReplicated, underMinISR, atMinISR, maxLag, consumerLag *prometheus.Desc
}

func newReplicationMetrics(m *Manager) *replicationMetrics {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &replicationMetrics{
		m: m,
		isrShrinks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kafka_server_replicamanager_isrshrinks_total",
			Help: "ISR shrinks of partitions led here that the controller committed.",
		}),
		isrExpands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kafka_server_replicamanager_isrexpands_total",
			Help: "ISR expansions of partitions led here that the controller committed.",
		}),
		partitionCount:  d("kafka_server_replicamanager_partitioncount", "Partitions hosted here."),
		leaderCount:     d("kafka_server_replicamanager_leadercount", "Partitions led here."),
		underReplicated: d("kafka_server_replicamanager_underreplicatedpartitions", "Partitions led here whose ISR is smaller than their replicas."),
		underMinISR:     d("kafka_server_replicamanager_underminisrpartitioncount", "Partitions led here whose ISR is smaller than min.insync.replicas."),
		atMinISR:        d("kafka_server_replicamanager_atminisrpartitioncount", "Partitions led here whose ISR is exactly min.insync.replicas."),
		maxLag:          d("kafka_server_replicafetchermanager_maxlag", "The largest lag, in records, of a partition this broker follows behind its leader's high watermark.", "clientId"),
		consumerLag:     d("kafka_server_fetcherlagmetrics_consumerlag", "How far, in records, a partition this broker follows is behind its leader's high watermark.", "clientId", "topic", "partition"),
	}
}

func (r *replicationMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{r, r.isrShrinks, r.isrExpands}
}

// Describe implements prometheus.Collector.
func (r *replicationMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{r.partitionCount, r.leaderCount, r.underReplicated, r.underMinISR, r.atMinISR, r.maxLag, r.consumerLag} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (r *replicationMetrics) Collect(ch chan<- prometheus.Metric) {
	var parts, leaders, under, belowMin, atMin int
	maxLag := int64(0)
	r.m.partitions.Range(func(_, v any) bool {
		p := v.(*Partition)
		parts++
		if lag := p.followerLag.Load(); lag >= 0 && !p.IsLeader() {
			maxLag = max(maxLag, lag)
			ch <- prometheus.MustNewConstMetric(r.consumerLag, prometheus.GaugeValue, float64(lag),
				"Replica", p.Topic, strconv.Itoa(int(p.Partition)))
		}
		if !p.IsLeader() {
			return true
		}
		leaders++
		p.mu.RLock()
		isr, replicas, minISR := len(p.isr), len(p.replicas), p.effectiveMinISRLocked()
		p.mu.RUnlock()
		if isr < replicas {
			under++
		}
		switch {
		case isr < minISR:
			belowMin++
		case isr == minISR:
			atMin++
		}
		return true
	})
	g := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	g(r.partitionCount, parts)
	g(r.leaderCount, leaders)
	g(r.underReplicated, under)
	g(r.underMinISR, belowMin)
	g(r.atMinISR, atMin)
	ch <- prometheus.MustNewConstMetric(r.maxLag, prometheus.GaugeValue, float64(maxLag), "Replica")
}
