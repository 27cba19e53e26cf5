package share

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/coordinator/runtime"
)

// runtimeMetrics are the coordinator runtime's measurements for the share
// coordinator, under Kafka's metric group share-coordinator-metrics as the
// JMX Prometheus exporter names it (kafka_server_share_coordinator_metrics_):
// partitions by state, the last partition load time, the event queue, and
// the batches, records and bytes appended to __share_group_state. Kafka's
// write rate and latency sensors are not here yet.
type runtimeMetrics struct {
	reg        prometheus.Registerer
	partitions *prometheus.GaugeVec
	loadTime   prometheus.Summary
	queue      prometheus.Gauge
	batches    prometheus.Counter
	records    prometheus.Counter
	bytes      prometheus.Counter
}

const ns = "kafka_server_share_coordinator_metrics_"

// newRuntimeMetrics registers the metrics with reg; nil without a
// registry.
func newRuntimeMetrics(reg prometheus.Registerer) *runtimeMetrics {
	if reg == nil {
		return nil
	}
	m := &runtimeMetrics{
		reg: reg,
		partitions: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ns + "num_partitions",
			Help: "Partitions of __share_group_state coordinated here, by state."}, []string{"state"}),
		loadTime: prometheus.NewSummary(prometheus.SummaryOpts{Name: ns + "partition_load_time_ms",
			Help: "Time it took to load a partition of __share_group_state (ms)."}),
		queue:   prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "event_queue_size", Help: "Operations queued on the share coordinator's shards."}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "batch_flush_total", Help: "Record batches appended to __share_group_state."}),
		records: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "batch_records_total", Help: "Records appended to __share_group_state."}),
		bytes:   prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "batch_bytes_total", Help: "Bytes appended to __share_group_state."}),
	}
	for _, c := range m.collectors() {
		reg.MustRegister(c)
	}
	return m
}

func (m *runtimeMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.partitions, m.loadTime, m.queue, m.batches, m.records, m.bytes}
}

func (m *runtimeMetrics) unregister() {
	if m == nil {
		return
	}
	for _, c := range m.collectors() {
		m.reg.Unregister(c)
	}
}

func (m *runtimeMetrics) PartitionState(from, to runtime.State) {
	if from != runtime.StateNone && from != runtime.StateInitial {
		m.partitions.WithLabelValues(from.String()).Dec()
	}
	if to != runtime.StateNone && to != runtime.StateInitial {
		m.partitions.WithLabelValues(to.String()).Inc()
	}
}

func (m *runtimeMetrics) PartitionLoaded(d time.Duration) {
	m.loadTime.Observe(float64(d) / float64(time.Millisecond))
}

func (m *runtimeMetrics) EventQueued(delta int) { m.queue.Add(float64(delta)) }

func (m *runtimeMetrics) BatchFlushed(records, bytes int) {
	m.batches.Inc()
	m.records.Add(float64(records))
	m.bytes.Add(float64(bytes))
}
