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
	lastOffset                                        atomic.Int64
	collectors                                        []prometheus.Collector
	reg                                               prometheus.Registerer
}

func newControllerMetrics(reg prometheus.Registerer) *controllerMetrics {
	m := &controllerMetrics{reg: reg}
	if reg == nil {
		return m
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
	gauge("offlinepartitionscount", "Partitions without a leader.", &m.offline)
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
	var parts, offline int64
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			parts++
			if p.Leader < 0 {
				offline++
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
	m.fenced.Store(fenced)
	m.live.Store(live)
	m.lastOffset.Store(im.Offset)
}

func (m *controllerMetrics) unregister() {
	for _, c := range m.collectors {
		m.reg.Unregister(c)
	}
}
