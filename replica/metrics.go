package replica

import (
	"github.com/prometheus/client_golang/prometheus"
)

// BrokerTopicMetrics are Kafka's BrokerTopicMetrics, named as the usual
// JMX exporter names them. The all-topics value is the sum over the topic
// label.
type BrokerTopicMetrics struct {
	reg            prometheus.Registerer
	bytesIn        *prometheus.CounterVec
	bytesOut       *prometheus.CounterVec
	messagesIn     *prometheus.CounterVec
	failedProduces *prometheus.CounterVec
	// Replication traffic, broker-wide as Kafka keeps it (only the
	// all-topics series exists): what followers appended, what leaders
	// sent to followers.
	replicationBytesIn  prometheus.Counter
	replicationBytesOut prometheus.Counter
}

func newBrokerTopicMetrics(reg prometheus.Registerer) *BrokerTopicMetrics {
	m := &BrokerTopicMetrics{
		reg: reg,
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_brokertopicmetrics_bytesin_total",
			Help: "Bytes appended to the log by producers, per topic.",
		}, []string{"topic"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_brokertopicmetrics_bytesout_total",
			Help: "Bytes sent to consumers, per topic.",
		}, []string{"topic"}),
		messagesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_brokertopicmetrics_messagesin_total",
			Help: "Records appended to the log by producers, per topic.",
		}, []string{"topic"}),
		failedProduces: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_brokertopicmetrics_failedproducerequests_total",
			Help: "Produce partitions that failed, per topic.",
		}, []string{"topic"}),
		replicationBytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kafka_server_brokertopicmetrics_replicationbytesin_total",
			Help: "Bytes appended by this broker's followers, fetched from leaders.",
		}),
		replicationBytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kafka_server_brokertopicmetrics_replicationbytesout_total",
			Help: "Bytes sent by this broker's leaders to followers.",
		}),
	}
	if reg != nil {
		for _, c := range m.collectors() {
			reg.MustRegister(c)
		}
	}
	return m
}

func (m *BrokerTopicMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.bytesIn, m.bytesOut, m.messagesIn, m.failedProduces, m.replicationBytesIn, m.replicationBytesOut}
}

func (m *BrokerTopicMetrics) unregister() {
	if m.reg != nil {
		for _, c := range m.collectors() {
			m.reg.Unregister(c)
		}
	}
}

// topicStats are one topic's counters, resolved once per partition so the
// produce and fetch paths do not look labels up per request.
type topicStats struct {
	bytesIn, bytesOut, messagesIn, failedProduces prometheus.Counter
	replIn, replOut                               prometheus.Counter
}

func (s *topicStats) replicationBytesIn(n int) { s.replIn.Add(float64(n)) }

func (m *BrokerTopicMetrics) forTopic(topic string) *topicStats {
	return &topicStats{
		bytesIn:        m.bytesIn.WithLabelValues(topic),
		bytesOut:       m.bytesOut.WithLabelValues(topic),
		messagesIn:     m.messagesIn.WithLabelValues(topic),
		failedProduces: m.failedProduces.WithLabelValues(topic),
		replIn:         m.replicationBytesIn,
		replOut:        m.replicationBytesOut,
	}
}

func (m *BrokerTopicMetrics) deleteTopic(topic string) {
	for _, c := range []*prometheus.CounterVec{m.bytesIn, m.bytesOut, m.messagesIn, m.failedProduces} {
		c.DeleteLabelValues(topic)
	}
}
