package raft

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/raft/v3/raftpb"
)

// raftMetrics exports Kafka's raft-metrics group (KafkaRaftMetrics) under
// the names Kafka's JMX exporter gives them
// (kafka_server_raftmetrics_<name>). Averages, maxima and rates are over a
// 30 s window, as Kafka's default metrics sampling (two 15 s samples).
type raftMetrics struct {
	n *Node

	mu            sync.Mutex
	commitLatency window // ms
	electLatency  window // ms
	appendRecords window // leader: records appended
	fetchRecords  window // follower: records appended

	descs map[string]*prometheus.Desc
}

var raftMetricHelp = map[string]string{
	"current_leader":                   "The current quorum leader's id; -1 indicates unknown",
	"current_epoch":                    "The current quorum epoch",
	"current_vote":                     "The current voted leader's id; -1 indicates not voted for anyone",
	"current_state":                    "The current state of this member (label state)",
	"high_watermark":                   "The high watermark maintained on this member; -1 if it is unknown",
	"log_end_offset":                   "The current raft log end offset",
	"log_end_epoch":                    "The current raft log end epoch",
	"commit_latency_avg":               "The average time in milliseconds to commit an entry in the raft log",
	"commit_latency_max":               "The maximum time in milliseconds to commit an entry in the raft log",
	"election_latency_avg":             "The average time in milliseconds spent on electing a new leader",
	"election_latency_max":             "The maximum time in milliseconds spent on electing a new leader",
	"append_records_rate":              "The average number of records appended per sec by the leader of the raft quorum",
	"fetch_records_rate":               "The average number of records fetched from the leader of the raft quorum",
	"number_unknown_voter_connections": "Number of unknown voters whose connection information is not cached",
}

func newRaftMetrics(n *Node) *raftMetrics {
	m := &raftMetrics{n: n, descs: map[string]*prometheus.Desc{}}
	for name, help := range raftMetricHelp {
		var labels []string
		if name == "current_state" {
			labels = []string{"state"}
		}
		m.descs[name] = prometheus.NewDesc("kafka_server_raftmetrics_"+name, help, labels, nil)
	}
	return m
}

// Describe implements prometheus.Collector.
func (m *raftMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *raftMetrics) Collect(ch chan<- prometheus.Metric) {
	n := m.n
	n.mu.Lock()
	st := n.st
	n.mu.Unlock()
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.descs[name], prometheus.GaugeValue, v, labels...)
	}
	gauge("current_leader", float64(st.leader))
	gauge("current_epoch", float64(st.epoch))
	gauge("current_vote", float64(st.vote))
	state := roleName(st.role)
	if n.isObserver() {
		state = "observer"
	}
	gauge("current_state", 1, state)
	gauge("high_watermark", float64(st.hw))
	gauge("log_end_offset", float64(st.leo))
	gauge("log_end_epoch", float64(n.ml.l.LatestEpoch()))
	if tr := n.trShared.Load(); tr != nil && state != "observer" {
		gauge("number_unknown_voter_connections", float64(tr.disconnected()))
	}
	now := time.Now()
	m.mu.Lock()
	cAvg, cMax := m.commitLatency.avgMax(now)
	eAvg, eMax := m.electLatency.avgMax(now)
	aRate, fRate := m.appendRecords.rate(now), m.fetchRecords.rate(now)
	m.mu.Unlock()
	gauge("commit_latency_avg", cAvg)
	gauge("commit_latency_max", cMax)
	gauge("election_latency_avg", eAvg)
	gauge("election_latency_max", eMax)
	gauge("append_records_rate", aRate)
	gauge("fetch_records_rate", fRate)
}

func (m *raftMetrics) committed(d time.Duration) {
	m.mu.Lock()
	m.commitLatency.record(time.Now(), float64(d.Microseconds())/1000)
	m.mu.Unlock()
}

func (m *raftMetrics) elected(d time.Duration) {
	m.mu.Lock()
	m.electLatency.record(time.Now(), float64(d.Milliseconds()))
	m.mu.Unlock()
}

// appended counts the records of entries written (as leader or follower).
func (m *raftMetrics) appended(leader bool, ents []*pb.Entry, offsets int64) {
	m.mu.Lock()
	w := &m.fetchRecords
	if leader {
		w = &m.appendRecords
	}
	w.record(time.Now(), float64(offsets))
	m.mu.Unlock()
}

// window keeps two 15 s samples: count, sum and max.
type window struct {
	samples [2]sample
}

type sample struct {
	start           time.Time
	count, sum, max float64
}

const sampleSpan = 15 * time.Second

func (w *window) current(now time.Time) *sample {
	s := &w.samples[0]
	if now.Sub(s.start) >= sampleSpan {
		w.samples[1] = w.samples[0]
		w.samples[0] = sample{start: now}
	}
	return &w.samples[0]
}

func (w *window) record(now time.Time, v float64) {
	s := w.current(now)
	s.count++
	s.sum += v
	if v > s.max {
		s.max = v
	}
}

func (w *window) live(now time.Time) []sample {
	var out []sample
	for _, s := range w.samples {
		if s.count > 0 && now.Sub(s.start) < 2*sampleSpan {
			out = append(out, s)
		}
	}
	return out
}

// avgMax is the average and maximum of the samples in the window (0 if
// none; Kafka reports NaN).
func (w *window) avgMax(now time.Time) (float64, float64) {
	var count, sum, mx float64
	for _, s := range w.live(now) {
		count += s.count
		sum += s.sum
		mx = max(mx, s.max)
	}
	if count == 0 {
		return 0, 0
	}
	return sum / count, mx
}

// rate is the sum over the window per second.
func (w *window) rate(now time.Time) float64 {
	var sum float64
	oldest := now
	for _, s := range w.live(now) {
		sum += s.sum
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	secs := max(now.Sub(oldest).Seconds(), 1)
	return sum / secs
}
