package txn

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/summary"
	"github.com/moldau/moldau/coordinator/runtime"
)

// Metrics are the transaction coordinator's, named as the JMX Prometheus
// exporter names Kafka's where Kafka has them:
//
//   - kafka.server:type=transaction-coordinator-metrics
//     partition-load-time-max and -avg (over the last 30 s):
//     kafka_server_transaction_coordinator_metrics_partition_load_time_max
//     and _avg, in ms.
//   - kafka.coordinator.transaction:type=TransactionMarkerChannelManager
//     UnknownDestinationQueueSize:
//     kafka_coordinator_transaction_transactionmarkerchannelmanager_unknowndestinationqueuesize.
//     (Kafka's LogAppendRetryQueueSize has no counterpart: a completion
//     that cannot be written reloads the partition, which sends the
//     markers again.)
//
// Moldau's own, under the same kafka_server_transaction_coordinator_metrics_
// prefix: the runtime's (num_partitions by state, event_queue_size,
// batch_flush_total, batch_records_total, batch_bytes_total), transactions
// by state (computed when scraped), and counters of completed, timed-out
// and fenced transactions, expired transactional ids, marker requests and
// abandoned markers, and marker_latency_ms: from the EndTxn (or the
// coordinator's own abort) that moved a transaction to PrepareCommit or
// PrepareAbort to its last marker written, with the percentiles Kafka's
// exporter gives a Yammer histogram. Kafka has no such metric; a producer
// whose next transaction starts within it waits for the markers.
type Metrics struct {
	reg prometheus.Registerer
	rt  *runtimeMetrics

	completed     *prometheus.CounterVec
	timedOutTxns  prometheus.Counter
	fencedTxns    prometheus.Counter
	expiredIDs    prometheus.Counter
	markerReqs    *prometheus.CounterVec
	markerTime    prometheus.Summary
	markerLatency *summary.Summary
	latencyVec    *summary.Vec
	abandonedTxns prometheus.Counter

	loadMu    sync.Mutex
	loadTimes []loadSample // the last 30 s

	collect            func() map[State]int
	unknownDestination func() int
}

type loadSample struct {
	at time.Time
	ms float64
}

const ns = "kafka_server_transaction_coordinator_metrics_"

var (
	descLoadMax     = prometheus.NewDesc(ns+"partition_load_time_max", "The max time it took to load the partitions in the last 30sec (ms; Kafka's partition-load-time-max).", nil, nil)
	descLoadAvg     = prometheus.NewDesc(ns+"partition_load_time_avg", "The avg time it took to load the partitions in the last 30sec (ms; Kafka's partition-load-time-avg).", nil, nil)
	descUnknownDest = prometheus.NewDesc("kafka_coordinator_transaction_transactionmarkerchannelmanager_unknowndestinationqueuesize",
		"Transaction markers whose partition has no leader now (Kafka's UnknownDestinationQueueSize).", nil, nil)
	descTransactions = prometheus.NewDesc(ns+"transactions", "Transactional ids coordinated here, by state.", []string{"state"}, nil)
)

func newMetrics(reg prometheus.Registerer) *Metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: ns + name, Help: help})
	}
	m := &Metrics{
		reg: reg,
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "transactions_completed_total",
			Help: "Transactions whose markers are all written, by result (commit, abort)."}, []string{"result"}),
		timedOutTxns:  c("transactions_timed_out_total", "Transactions aborted because they outlived their transaction.timeout.ms."),
		fencedTxns:    c("producers_fenced_total", "Open transactions aborted because InitProducerId fenced their producer."),
		expiredIDs:    c("transactional_ids_expired_total", "Transactional ids removed after transactional.id.expiration.ms."),
		markerReqs:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "marker_requests_total", Help: "WriteTxnMarkers requests sent to partition leaders, by result (ok, error)."}, []string{"result"}),
		markerTime:    prometheus.NewSummary(prometheus.SummaryOpts{Name: ns + "marker_request_time_ms", Help: "Time a WriteTxnMarkers request took (ms).", Objectives: map[float64]float64{0.5: 0.05, 0.99: 0.001}}),
		abandonedTxns: c("markers_abandoned_total", "Transactions whose markers were refused by a newer producer or coordinator epoch."),
		latencyVec: summary.NewVec(summary.Opts{Name: ns + "marker_latency_ms",
			Help:       "Time from EndTxn (PrepareCommit or PrepareAbort) to the transaction's last marker written (ms).",
			Objectives: []float64{0.5, 0.75, 0.95, 0.98, 0.99, 0.999}, Unit: 0.001, MaxAge: 5 * time.Minute, AgeBuckets: 5}, nil),
	}
	m.markerLatency = m.latencyVec.WithLabelValues()
	if reg != nil {
		m.rt = newRuntimeMetrics(m)
		for _, col := range m.collectors() {
			reg.MustRegister(col)
		}
	}
	return m
}

func (m *Metrics) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{m.completed, m.timedOutTxns, m.fencedTxns, m.expiredIDs, m.markerReqs, m.markerTime, m.latencyVec, m.abandonedTxns, gauges{m}}
	if m.rt != nil {
		cs = append(cs, m.rt.collectors()...)
	}
	return cs
}

func (m *Metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.collectors() {
		m.reg.Unregister(c)
	}
}

// runtimeMetrics returns the runtime's hook (nil without a registry).
func (m *Metrics) runtimeMetrics() runtime.Metrics {
	if m.rt == nil {
		return nil
	}
	return m.rt
}

func (m *Metrics) transactionCompleted(commit bool) {
	r := "abort"
	if commit {
		r = "commit"
	}
	m.completed.WithLabelValues(r).Inc()
}

func (m *Metrics) timedOut()         { m.timedOutTxns.Inc() }
func (m *Metrics) fenced()           { m.fencedTxns.Inc() }
func (m *Metrics) expired(n int)     { m.expiredIDs.Add(float64(n)) }
func (m *Metrics) markersAbandoned() { m.abandonedTxns.Inc() }

func (m *Metrics) markerRequest(d time.Duration, err error) {
	r := "ok"
	if err != nil {
		r = "error"
	}
	m.markerReqs.WithLabelValues(r).Inc()
	m.markerTime.Observe(float64(d) / float64(time.Millisecond))
}

// markersCompleted observes one transaction's marker latency.
func (m *Metrics) markersCompleted(d time.Duration) {
	m.markerLatency.Observe(float64(d) / float64(time.Millisecond))
}

const loadWindow = 30 * time.Second

func (m *Metrics) partitionLoaded(d time.Duration) {
	now := time.Now()
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	m.loadTimes = append(m.pruneLocked(now), loadSample{now, float64(d) / float64(time.Millisecond)})
}

// pruneLocked drops samples older than the window (and bounds the list).
func (m *Metrics) pruneLocked(now time.Time) []loadSample {
	i := 0
	for i < len(m.loadTimes) && (now.Sub(m.loadTimes[i].at) > loadWindow || len(m.loadTimes)-i > 4096) {
		i++
	}
	return append(m.loadTimes[:0], m.loadTimes[i:]...)
}

type gauges struct{ m *Metrics }

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLoadMax
	ch <- descLoadAvg
	ch <- descUnknownDest
	ch <- descTransactions
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	m := g.m
	m.loadMu.Lock()
	m.loadTimes = m.pruneLocked(time.Now())
	var sum, mx float64
	for _, s := range m.loadTimes {
		sum += s.ms
		mx = max(mx, s.ms)
	}
	avg := 0.0
	if n := len(m.loadTimes); n > 0 {
		avg = sum / float64(n)
	}
	m.loadMu.Unlock()
	ch <- prometheus.MustNewConstMetric(descLoadMax, prometheus.GaugeValue, mx)
	ch <- prometheus.MustNewConstMetric(descLoadAvg, prometheus.GaugeValue, avg)
	if m.unknownDestination != nil {
		ch <- prometheus.MustNewConstMetric(descUnknownDest, prometheus.GaugeValue, float64(m.unknownDestination()))
	}
	if m.collect != nil {
		byState := m.collect()
		for st := Empty; st <= CompleteAbort; st++ {
			ch <- prometheus.MustNewConstMetric(descTransactions, prometheus.GaugeValue, float64(byState[st]), st.String())
		}
	}
}

// collectSnapshot counts the transactional ids of every shard by state,
// waiting at most 5 s.
func (s *Service) collectSnapshot() map[State]int {
	total := map[State]int{}
	done := make(chan []runtime.PartitionResult[map[State]int], 1)
	runtime.ReadAll(s.rt, "metrics", func(sh *Shard) (map[State]int, error) {
		out := map[State]int{}
		for _, m := range sh.txns {
			out[m.state]++
		}
		return out, nil
	}, func(r []runtime.PartitionResult[map[State]int]) { done <- r })
	select {
	case rs := <-done:
		for _, r := range rs {
			for st, n := range r.Response {
				total[st] += n
			}
		}
	case <-time.After(5 * time.Second):
	}
	return total
}

// runtimeMetrics are the coordinator runtime's measurements (the same as
// the group coordinator's, under this coordinator's prefix).
type runtimeMetrics struct {
	m          *Metrics
	partitions *prometheus.GaugeVec
	queue      prometheus.Gauge
	batches    prometheus.Counter
	records    prometheus.Counter
	bytes      prometheus.Counter
}

func newRuntimeMetrics(m *Metrics) *runtimeMetrics {
	return &runtimeMetrics{
		m: m,
		partitions: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ns + "num_partitions",
			Help: "Partitions of __transaction_state coordinated here, by state."}, []string{"state"}),
		queue:   prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "event_queue_size", Help: "Operations queued on the coordinator's shards."}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "batch_flush_total", Help: "Record batches appended to __transaction_state."}),
		records: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "batch_records_total", Help: "Records appended to __transaction_state."}),
		bytes:   prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "batch_bytes_total", Help: "Bytes appended to __transaction_state."}),
	}
}

func (r *runtimeMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.partitions, r.queue, r.batches, r.records, r.bytes}
}

func (r *runtimeMetrics) PartitionState(from, to runtime.State) {
	if from != runtime.StateNone && from != runtime.StateInitial {
		r.partitions.WithLabelValues(from.String()).Dec()
	}
	if to != runtime.StateNone && to != runtime.StateInitial {
		r.partitions.WithLabelValues(to.String()).Inc()
	}
}

func (r *runtimeMetrics) PartitionLoaded(d time.Duration) { r.m.partitionLoaded(d) }
func (r *runtimeMetrics) EventQueued(delta int)           { r.queue.Add(float64(delta)) }

func (r *runtimeMetrics) BatchFlushed(records, bytes int) {
	r.batches.Inc()
	r.records.Add(float64(records))
	r.bytes.Add(float64(bytes))
}
