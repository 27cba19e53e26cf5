package log

import (
	"github.com/prometheus/client_golang/prometheus"
)

// cleanerCollector exports the cleaner's gauges at scrape time, with the
// names Kafka's JMX exporter gives kafka.log:type=LogCleaner and
// type=LogCleanerManager. Like Kafka's, the per-thread gauges look at each
// thread's last cleaning.
type cleanerCollector struct {
	lc                                                              *LogCleaner
	maxBufferUtil, recopy, maxCleanTime, maxCompactionDelay, dead   *prometheus.Desc
	maxDirty, sinceLastRun, uncleanablePartitions, uncleanableBytes *prometheus.Desc
}

func newCleanerCollector(lc *LogCleaner) *cleanerCollector {
	dir := []string{"logDirectory"}
	return &cleanerCollector{
		lc:                    lc,
		maxBufferUtil:         prometheus.NewDesc("kafka_log_logcleaner_max_buffer_utilization_percent", "Largest share of its offset map a cleaner thread filled in its last cleaning.", nil, nil),
		recopy:                prometheus.NewDesc("kafka_log_logcleaner_cleaner_recopy_percent", "Bytes written over bytes read in the cleaner threads' last cleanings, in percent.", nil, nil),
		maxCleanTime:          prometheus.NewDesc("kafka_log_logcleaner_max_clean_time_secs", "Longest last cleaning of a cleaner thread, in seconds.", nil, nil),
		maxCompactionDelay:    prometheus.NewDesc("kafka_log_logcleaner_max_compaction_delay_secs", "Longest delay past max.compaction.lag.ms seen at the last choice of a log to clean, in seconds.", nil, nil),
		dead:                  prometheus.NewDesc("kafka_log_logcleaner_deadthreadcount", "Cleaner threads that died (a failing cleaning marks its partition uncleanable instead).", nil, nil),
		maxDirty:              prometheus.NewDesc("kafka_log_logcleanermanager_max_dirty_percent", "Cleanable ratio of the dirtiest compacted log at the last choice, in percent.", nil, nil),
		sinceLastRun:          prometheus.NewDesc("kafka_log_logcleanermanager_time_since_last_run_ms", "Milliseconds since a cleaner thread last looked for a log to clean.", nil, nil),
		uncleanablePartitions: prometheus.NewDesc("kafka_log_logcleanermanager_uncleanable_partitions_count", "Partitions whose cleaning failed, per log dir.", dir, nil),
		uncleanableBytes:      prometheus.NewDesc("kafka_log_logcleanermanager_uncleanable_bytes", "Cleanable bytes of the uncleanable partitions, per log dir.", dir, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *cleanerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.maxBufferUtil, c.recopy, c.maxCleanTime, c.maxCompactionDelay, c.dead, c.maxDirty, c.sinceLastRun, c.uncleanablePartitions, c.uncleanableBytes} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *cleanerCollector) Collect(ch chan<- prometheus.Metric) {
	var util, cleanSecs, delayMs float64
	var read, written int64
	for _, t := range c.lc.threads {
		s, pre := t.stats()
		util = max(util, s.bufferUtilization)
		cleanSecs = max(cleanSecs, s.elapsed().Seconds())
		delayMs = max(delayMs, float64(pre.maxCompactionDelayMs))
		read += s.bytesRead
		written += s.bytesWritten
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.maxBufferUtil, float64(int(100*util)))
	gauge(c.recopy, float64(int(100*float64(written)/float64(max(read, 1)))))
	gauge(c.maxCleanTime, float64(int(cleanSecs)))
	gauge(c.maxCompactionDelay, float64(int(delayMs/1000)))
	gauge(c.dead, 0)

	cm := c.lc.mgr
	now := cm.now()
	cm.mu.Lock()
	dirty, last := cm.dirtiestRatio, cm.timeOfLastRun
	counts := make(map[string]int)
	var uncleanable []TopicPartition
	for dir := range cm.checkpoints {
		counts[dir] = len(cm.uncleanable[dir])
		for tp := range cm.uncleanable[dir] {
			uncleanable = append(uncleanable, tp)
		}
	}
	checkpoints := make(map[TopicPartition]int64)
	for _, cp := range cm.checkpoints {
		for tp, off := range cp {
			checkpoints[tp] = off
		}
	}
	cm.mu.Unlock()
	gauge(c.maxDirty, float64(int(100*dirty)))
	gauge(c.sinceLastRun, float64(now.Sub(last).Milliseconds()))
	bytes := make(map[string]int64)
	for _, l := range cm.logs() {
		for _, tp := range uncleanable {
			if l.tp != tp {
				continue
			}
			v := l.cleanerView()
			off, has := checkpoints[tp]
			first := v.logStart
			if has && off >= v.logStart && off <= v.leo {
				first = off
			}
			_, n := calculateCleanableBytes(&v, first, min(v.lso, v.activeBase()))
			bytes[logDirOf(l)] += n
		}
	}
	for dir, n := range counts {
		gauge(c.uncleanablePartitions, float64(n), dir)
		gauge(c.uncleanableBytes, float64(bytes[dir]), dir)
	}
}
