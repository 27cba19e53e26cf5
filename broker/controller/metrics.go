package controller

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/metadata"
)

// controllerMetrics are Kafka's KafkaController gauges, as its JMX exporter
// names them (kafka.controller:type=KafkaController,name=X ->
// kafka_controller_kafkacontroller_x). Every node reports them; the counts
// are those of the metadata this node's controller has replayed, and
// ActiveControllerCount is 1 only on the active controller, so a sum over
// the cluster is 1 when all is well.
type controllerMetrics struct {
	active, topics, partitions, offline, fenced, live atomic.Int64
	imbalanced, lastOffset                            atomic.Int64
	// unclean counts the unclean leader elections this node's controller
	// decided while active (kafka.controller:type=ControllerStats,
	// name=UncleanLeaderElectionsPerSec, a meter in Kafka: its count).
	unclean    prometheus.Counter
	collectors []prometheus.Collector
	reg        prometheus.Registerer
}

func newControllerMetrics(reg prometheus.Registerer) *controllerMetrics {
	m := &controllerMetrics{reg: reg, unclean: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_controller_controllerstats_uncleanleaderelectionspersec_total",
		Help: "Leaders elected from outside the ISR (unclean.leader.election.enable), which may lose committed records.",
	})}
	if reg == nil {
		return m
	}
	if err := reg.Register(m.unclean); err == nil {
		m.collectors = append(m.collectors, m.unclean)
	}
	gauge := func(name, help string, v *atomic.Int64) {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kafka_controller_kafkacontroller_" + name, Help: help,
		}, func() float64 { return float64(v.Load()) })
		if err := reg.Register(g); err == nil {
			m.collectors = append(m.collectors, g)
		}
	}
	gauge("activecontrollercount", "1 if this node is the active controller.", &m.active)
	gauge("globaltopiccount", "Topics in the cluster.", &m.topics)
	gauge("globalpartitioncount", "Partitions in the cluster.", &m.partitions)
	gauge("offlinepartitionscount", "Partitions without a leader, or whose leader is fenced.", &m.offline)
	gauge("preferredreplicaimbalancecount", "Partitions whose leader is not their first (preferred) replica.", &m.imbalanced)
	gauge("fencedbrokercount", "Registered brokers that are fenced.", &m.fenced)
	gauge("activebrokercount", "Registered brokers that are unfenced.", &m.live)
	gauge("lastappliedrecordoffset", "Offset of the last metadata record the controller replayed.", &m.lastOffset)
	return m
}

// update recounts from an image; on the loop, after each change.
func (m *controllerMetrics) update(im *metadata.Image, active bool) {
	a := int64(0)
	if active {
		a = 1
	}
	m.active.Store(a)
	var parts, offline, imbalanced int64
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			parts++
			// Kafka counts a leader of -1 only; a fenced leader is
			// offline too (a re-registered broker keeps its
			// sole-replica partitions until it is unfenced).
			if b := im.Brokers[p.Leader]; p.Leader < 0 || b == nil || b.Fenced {
				offline++
			}
			// Kafka's hasPreferredLeader: a leaderless partition is
			// imbalanced too.
			if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
				imbalanced++
			}
		}
	}
	var fenced, live int64
	for _, b := range im.Brokers {
		if b.Fenced {
			fenced++
		} else {
			live++
		}
	}
	m.topics.Store(int64(im.NumTopics()))
	m.partitions.Store(parts)
	m.offline.Store(offline)
	m.imbalanced.Store(imbalanced)
	m.fenced.Store(fenced)
	m.live.Store(live)
	m.lastOffset.Store(im.Offset)
}

func (m *controllerMetrics) unregister() {
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}
