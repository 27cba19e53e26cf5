package replica

import "github.com/prometheus/client_golang/prometheus"

// remoteLogMetrics are Kafka's tiered-storage BrokerTopicMetrics
// (RemoteCopyBytesPerSec, RemoteFetchBytesPerSec and the request and error
// meters; the RemoteCopyLagBytes, RemoteCopyLagSegments,
// RemoteLogSizeBytes and RemoteLogMetadataCount gauges; the
// BuildRemoteLogAuxState request and error meters of followers), per topic, named
// as the usual JMX exporter names them; only while tiered storage runs.
type remoteLogMetrics struct {
	reg                                    prometheus.Registerer
	copyBytes, copyRequests, copyErrors    *prometheus.CounterVec
	fetchBytes, fetchRequests, fetchErrors *prometheus.CounterVec
	deleteRequests, deleteErrors           *prometheus.CounterVec
	auxStateRequests, auxStateErrors       *prometheus.CounterVec
	// Kafka's gauges, per topic: the sums over the partitions led here
	// at the last task round (see remoteLog.report).
	copyLagBytes, copyLagSegments, logSizeBytes, metadataCount *prometheus.GaugeVec
}

func newRemoteLogMetrics(reg prometheus.Registerer) (*remoteLogMetrics, error) {
	vec := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_" + name + "_total", Help: help}, []string{"topic"})
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kafka_server_brokertopicmetrics_" + name, Help: help}, []string{"topic"})
	}
	m := &remoteLogMetrics{
		reg:            reg,
		copyBytes:      vec("remotecopybytes", "Bytes of segments copied to remote storage, per topic."),
		copyRequests:   vec("remotecopyrequests", "Segment copies to remote storage, per topic."),
		copyErrors:     vec("remotecopyerrors", "Segment copies to remote storage that failed, per topic."),
		fetchBytes:     vec("remotefetchbytes", "Bytes read from remote storage for consumers, per topic."),
		fetchRequests:  vec("remotefetchrequests", "Reads from remote storage for consumers, per topic."),
		fetchErrors:    vec("remotefetcherrors", "Reads from remote storage that failed, per topic."),
		deleteRequests: vec("remotedeleterequests", "Remote segment deletions, per topic."),
		deleteErrors:   vec("remotedeleteerrors", "Remote segment deletions that failed, per topic."),
		auxStateRequests: vec("buildremotelogauxstaterequests",
			"Followers' rebuilds of the leader epochs and producer state below the leader's local log start from remote storage, per topic."),
		auxStateErrors: vec("buildremotelogauxstateerrors",
			"Followers' rebuilds from remote storage that failed (retried after replica.fetch.backoff.ms), per topic."),
		copyLagBytes: gauge("remotecopylagbytes",
			"Bytes of closed local segments not yet copied to remote storage, over the partitions led here, per topic (RemoteCopyLagBytes)."),
		copyLagSegments: gauge("remotecopylagsegments",
			"Closed local segments not yet copied to remote storage, over the partitions led here, per topic (RemoteCopyLagSegments)."),
		logSizeBytes: gauge("remotelogsizebytes",
			"Bytes of the segments in remote storage, over the partitions led here, per topic (RemoteLogSizeBytes)."),
		metadataCount: gauge("remotelogmetadatacount",
			"Remote segment metadata entries, over the partitions led here, per topic (RemoteLogMetadataCount)."),
	}
	if reg != nil {
		for i, c := range m.collectors() {
			if err := reg.Register(c); err != nil {
				for _, done := range m.collectors()[:i] {
					reg.Unregister(done)
				}
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *remoteLogMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.copyBytes, m.copyRequests, m.copyErrors, m.fetchBytes, m.fetchRequests,
		m.fetchErrors, m.deleteRequests, m.deleteErrors, m.auxStateRequests, m.auxStateErrors, m.copyLagBytes, m.copyLagSegments, m.logSizeBytes, m.metadataCount}
}

// remotePartitionStats are a partition's figures for the gauges.
type remotePartitionStats struct {
	copyLagBytes, copyLagSegments, logSizeBytes, metadataCount int64
}

// setGauges sets the gauges to the sums of stats per topic, and removes
// the topics no longer there.
func (m *remoteLogMetrics) setGauges(stats map[TopicPartition]remotePartitionStats, topics map[string]bool) {
	if m == nil {
		return
	}
	sums := map[string]remotePartitionStats{}
	for tp, s := range stats {
		t := sums[tp.Topic]
		t.copyLagBytes += s.copyLagBytes
		t.copyLagSegments += s.copyLagSegments
		t.logSizeBytes += s.logSizeBytes
		t.metadataCount += s.metadataCount
		sums[tp.Topic] = t
	}
	for topic := range topics {
		if _, ok := sums[topic]; !ok {
			for _, g := range []*prometheus.GaugeVec{m.copyLagBytes, m.copyLagSegments, m.logSizeBytes, m.metadataCount} {
				g.DeleteLabelValues(topic)
			}
		}
	}
	for topic, s := range sums {
		m.copyLagBytes.WithLabelValues(topic).Set(float64(s.copyLagBytes))
		m.copyLagSegments.WithLabelValues(topic).Set(float64(s.copyLagSegments))
		m.logSizeBytes.WithLabelValues(topic).Set(float64(s.logSizeBytes))
		m.metadataCount.WithLabelValues(topic).Set(float64(s.metadataCount))
	}
}

func (m *remoteLogMetrics) unregister() {
	if m == nil || m.reg == nil {
		return
	}
	for _, c := range m.collectors() {
		m.reg.Unregister(c)
	}
}

// count adds one request (and n bytes if bytes is set) or one error.
func count(requests, errs, bytes *prometheus.CounterVec, topic string, n int64, err error) {
	if requests == nil {
		return
	}
	requests.WithLabelValues(topic).Inc()
	if err != nil {
		errs.WithLabelValues(topic).Inc()
		return
	}
	if bytes != nil && n > 0 {
		bytes.WithLabelValues(topic).Add(float64(n))
	}
}

func (m *remoteLogMetrics) copied(topic string, n int64, err error) {
	if m != nil {
		count(m.copyRequests, m.copyErrors, m.copyBytes, topic, n, err)
	}
}

func (m *remoteLogMetrics) fetched(topic string, n int64, err error) {
	if m != nil {
		count(m.fetchRequests, m.fetchErrors, m.fetchBytes, topic, n, err)
	}
}

func (m *remoteLogMetrics) deleted(topic string, err error) {
	if m != nil {
		count(m.deleteRequests, m.deleteErrors, nil, topic, 0, err)
	}
}

func (m *remoteLogMetrics) builtAuxState(topic string, err error) {
	if m != nil {
		count(m.auxStateRequests, m.auxStateErrors, nil, topic, 0, err)
	}
}
