package share

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are Kafka's share-group metrics of the partition side, with the
// names its JMX exporter gives them: ShareGroupMetrics
// (kafka.server:type=share-group-metrics: share-acknowledgement,
// record-acknowledgement by ack-type, partition-load-time) and the
// share-fetch and share-acknowledgement request counts of
// BrokerTopicMetrics; and a gauge of the records in flight, Kafka's
// SharePartitionMetrics InFlightMessageCount summed over the share
// partitions of this broker.
type metrics struct {
	shareAcks      prometheus.Counter
	recordAcks     *prometheus.CounterVec
	loadTime       prometheus.Histogram
	fetches        prometheus.Counter
	failedFetches  prometheus.Counter
	ackRequests    prometheus.Counter
	failedAckRequs prometheus.Counter
	inFlight       prometheus.GaugeFunc
	sessions       prometheus.GaugeFunc
	// sessionEvictions: sessions the cache removed, idle ones for room
	// and those whose connection closed.
	sessionEvictions prometheus.Counter
	all              []prometheus.Collector
	reg              prometheus.Registerer
}

// ackTypeNames are Kafka's AcknowledgeType names, the ack-type tag.
var ackTypeNames = map[AcknowledgeType]string{AckGap: "Gap", AckAccept: "Accept", AckRelease: "Release", AckReject: "Reject", AckRenew: "Renew"}

func newMetrics(reg prometheus.Registerer, inFlight, sessions func() float64) *metrics {
	m := &metrics{
		shareAcks: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_share_group_metrics_share_acknowledgement_total",
			Help: "Acknowledgement requests and ShareFetches carrying acknowledgements (Kafka's share-acknowledgement)."}),
		recordAcks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_share_group_metrics_record_acknowledgement_total",
			Help: "Records acknowledged, by acknowledgement type (Kafka's record-acknowledgement)."}, []string{"ack_type"}),
		loadTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kafka_server_share_group_metrics_partition_load_time_ms",
			Help:    "Time to load a share partition's state from the share coordinator (Kafka's partition-load-time).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8)}),
		fetches: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_totalsharefetchrequests_total",
			Help: "ShareFetch requests (Kafka's TotalShareFetchRequestsPerSec)."}),
		failedFetches: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_failedsharefetchrequests_total",
			Help: "ShareFetch requests that failed (Kafka's FailedShareFetchRequestsPerSec)."}),
		ackRequests: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_totalshareacknowledgementrequests_total",
			Help: "ShareAcknowledge requests (Kafka's TotalShareAcknowledgementRequestsPerSec)."}),
		failedAckRequs: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_failedshareacknowledgementrequests_total",
			Help: "ShareAcknowledge requests that failed (Kafka's FailedShareAcknowledgementRequestsPerSec)."}),
		inFlight: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kafka_server_sharepartitionmetrics_inflightmessagecount",
			Help: "Records in flight (acquired or available again) over the share partitions led here (Kafka's InFlightMessageCount, summed)."}, inFlight),
		sessions: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kafka_server_sharesessioncache_sharesessionscount",
			Help: "Share sessions open on this broker (Kafka's ShareSessionCache ShareSessionsCount)."}, sessions),
		sessionEvictions: prometheus.NewCounter(prometheus.CounterOpts{Name: "kafka_server_sharesessioncache_sharesessionevictions_total",
			Help: "Share sessions removed by the broker: their connection closed, or idle and evicted for a new one (Kafka's ShareSessionEvictionsPerSec)."}),
		reg: reg,
	}
	m.all = []prometheus.Collector{m.shareAcks, m.recordAcks, m.loadTime, m.fetches, m.failedFetches, m.ackRequests, m.failedAckRequs, m.inFlight, m.sessions, m.sessionEvictions}
	if reg != nil {
		for _, c := range m.all {
			reg.MustRegister(c)
		}
	}
	return m
}

// acknowledged counts one request's acknowledgements.
func (m *metrics) acknowledged(acks map[TopicIDPartition][]AcknowledgementBatch) {
	if len(acks) == 0 {
		return
	}
	m.shareAcks.Inc()
	for _, bs := range acks {
		for _, b := range bs {
			if len(b.Types) == 1 {
				m.recordAcks.WithLabelValues(ackTypeNames[b.Types[0]]).Add(float64(b.LastOffset - b.FirstOffset + 1))
				continue
			}
			for _, t := range b.Types {
				m.recordAcks.WithLabelValues(ackTypeNames[t]).Inc()
			}
		}
	}
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.all {
		m.reg.Unregister(c)
	}
}
