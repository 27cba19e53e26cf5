package log

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// logCollector exports per-partition gauges at scrape time by iterating
// the Manager's logs (no per-log registration), the LogManager's gauges of
// offline dirs, and the scrubber's counters.
type logCollector struct {
	m                                   *Manager
	size, startOffset, endOffset, nsegs *prometheus.Desc
	lsoLag                              *prometheus.Desc
	// Kafka's kafka.log:type=LogManager gauges.
	offlineDirs, dirOffline *prometheus.Desc
}

func newLogCollector(m *Manager) *logCollector {
	labels := []string{"topic", "partition"}
	return &logCollector{
		m:           m,
		size:        prometheus.NewDesc("kafka_log_log_size", "Size of the partition's log in bytes.", labels, nil),
		startOffset: prometheus.NewDesc("kafka_log_log_logstartoffset", "Log start offset of the partition.", labels, nil),
		endOffset:   prometheus.NewDesc("kafka_log_log_logendoffset", "Log end offset of the partition.", labels, nil),
		nsegs:       prometheus.NewDesc("kafka_log_log_numlogsegments", "Number of segments of the partition's log.", labels, nil),
		// Kafka's Partition gauge LastStableOffsetLag (kafka.cluster).
		lsoLag:      prometheus.NewDesc("kafka_cluster_partition_laststableoffsetlag", "High watermark minus last stable offset: offsets held back from read_committed consumers by open transactions.", labels, nil),
		offlineDirs: prometheus.NewDesc("kafka_log_logmanager_offlinelogdirectorycount", "Log dirs that are offline after an I/O error.", nil, nil),
		dirOffline:  prometheus.NewDesc("kafka_log_logmanager_logdirectoryoffline", "1 if the log dir is offline after an I/O error, else 0.", []string{"logDirectory"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *logCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.size
	ch <- c.startOffset
	ch <- c.endOffset
	ch <- c.nsegs
	ch <- c.lsoLag
	ch <- c.offlineDirs
	ch <- c.dirOffline
	for _, sc := range c.m.scrubber.collectors() {
		sc.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *logCollector) Collect(ch chan<- prometheus.Metric) {
	offline := 0
	for _, d := range c.m.dirs {
		v := 0.0
		if d.failed() != nil {
			v = 1
			offline++
		}
		ch <- prometheus.MustNewConstMetric(c.dirOffline, prometheus.GaugeValue, v, d.path)
	}
	ch <- prometheus.MustNewConstMetric(c.offlineDirs, prometheus.GaugeValue, float64(offline))
	for _, sc := range c.m.scrubber.collectors() {
		sc.Collect(ch)
	}
	for _, l := range c.m.Logs() {
		t, p := l.tp.Topic, strconv.Itoa(int(l.tp.Partition))
		l.segMu.RLock()
		size, start, end, n := l.size, l.logStart, l.leo, len(l.segs)
		lag := l.hw - l.lastStableOffsetLocked()
		l.segMu.RUnlock()
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(size), t, p)
		ch <- prometheus.MustNewConstMetric(c.startOffset, prometheus.GaugeValue, float64(start), t, p)
		ch <- prometheus.MustNewConstMetric(c.endOffset, prometheus.GaugeValue, float64(end), t, p)
		ch <- prometheus.MustNewConstMetric(c.nsegs, prometheus.GaugeValue, float64(n), t, p)
		ch <- prometheus.MustNewConstMetric(c.lsoLag, prometheus.GaugeValue, float64(lag), t, p)
	}
}
