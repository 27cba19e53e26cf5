package group

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/coordinator/runtime"
)

// runtimeMetrics are Kafka's CoordinatorRuntimeMetrics of the group
// coordinator (kafka.server:type=group-coordinator-metrics): partitions by
// state, the event queue, load times and flushed batches.
type runtimeMetrics struct {
	partitions *prometheus.GaugeVec
	queue      prometheus.Gauge
	loadTime   prometheus.Summary
	batches    prometheus.Counter
	records    prometheus.Counter
	bytes      prometheus.Counter
}

func newRuntimeMetrics(reg prometheus.Registerer) *runtimeMetrics {
	if reg == nil {
		return nil
	}
	const ns = "kafka_server_group_coordinator_metrics_"
	m := &runtimeMetrics{
		partitions: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ns + "num_partitions",
			Help: "Partitions of __consumer_offsets coordinated here, by state (Kafka's num-partitions)."}, []string{"state"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "event_queue_size",
			Help: "Operations queued on the coordinator's shards (Kafka's event-queue-size)."}),
		loadTime: prometheus.NewSummary(prometheus.SummaryOpts{Name: ns + "partition_load_time_ms",
			Help: "Time to load a shard by replaying its partition (Kafka's partition-load-time).", Objectives: map[float64]float64{0.5: 0.05, 0.99: 0.001}}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "batch_flush_total",
			Help: "Record batches appended to __consumer_offsets by the coordinator."}),
		records: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "batch_records_total",
			Help: "Records appended to __consumer_offsets by the coordinator."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "batch_bytes_total",
			Help: "Bytes appended to __consumer_offsets by the coordinator."}),
	}
	for _, c := range m.collectors() {
		reg.MustRegister(c)
	}
	return m
}

func (m *runtimeMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.partitions, m.queue, m.loadTime, m.batches, m.records, m.bytes}
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
