package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/moldau/moldau/cmd/moldau/promtext"
)

// brokerSample is what the bench reads from a broker's /metrics
// (--metrics-url): its process CPU and, for the bench's topic, Kafka's
// tiered-storage meters and copy lag, summed over the topic's partitions
// led there (0 when the broker has none: no tiered storage, or nothing
// copied or read yet).
type brokerSample struct {
	cpuSeconds float64
	// remoteCopyBytes, remoteFetchBytes and remoteCopyRequests are the
	// counters kafka_server_brokertopicmetrics_remotecopybytes_total,
	// remotefetchbytes_total and remotecopyrequests_total; copyLagBytes and copyLagSegments the gauges
	// remotecopylagbytes and remotecopylagsegments, updated by the broker
	// every remote.log.manager.task.interval.ms.
	remoteCopyBytes, remoteFetchBytes float64
	remoteCopyRequests                float64
	copyLagBytes, copyLagSegments     float64
}

// brokerMetrics are the metrics brokerSample reads, by name: the process
// CPU, then the topic's tiered-storage meters and gauges.
var brokerMetrics = map[string]func(*brokerSample) *float64{
	"process_cpu_seconds_total":                                func(s *brokerSample) *float64 { return &s.cpuSeconds },
	"kafka_server_brokertopicmetrics_remotecopybytes_total":    func(s *brokerSample) *float64 { return &s.remoteCopyBytes },
	"kafka_server_brokertopicmetrics_remotecopyrequests_total": func(s *brokerSample) *float64 { return &s.remoteCopyRequests },
	"kafka_server_brokertopicmetrics_remotefetchbytes_total":   func(s *brokerSample) *float64 { return &s.remoteFetchBytes },
	"kafka_server_brokertopicmetrics_remotecopylagbytes":       func(s *brokerSample) *float64 { return &s.copyLagBytes },
	"kafka_server_brokertopicmetrics_remotecopylagsegments":    func(s *brokerSample) *float64 { return &s.copyLagSegments },
}

// scrapeBroker reads a brokerSample for topic from a Prometheus text
// exposition at url (a broker's /metrics).
func scrapeBroker(ctx context.Context, url, topic string) (brokerSample, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var s brokerSample
	cpu := false
	err := promtext.Scrape(ctx, http.DefaultClient, url, 64<<20, s.add(topic, &cpu))
	return s, sampleErr(err, cpu)
}

// parseBrokerSample reads a brokerSample for topic from a Prometheus text
// exposition; process_cpu_seconds_total must be there.
func parseBrokerSample(r io.Reader, topic string) (brokerSample, error) {
	var s brokerSample
	cpu := false
	err := promtext.Parse(r, s.add(topic, &cpu))
	return s, sampleErr(err, cpu)
}

// add adds each sample of a metric in brokerMetrics (of topic, but the
// CPU) to s, and notes in cpu that the CPU was there.
func (s *brokerSample) add(topic string, cpu *bool) func(name, labels, value string) error {
	return func(name, labels, value string) error {
		field, known := brokerMetrics[name]
		if !known {
			return nil
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("metric %s: %w", name, err)
		}
		if name == "process_cpu_seconds_total" {
			s.cpuSeconds, *cpu = v, true
		} else if t, _ := promtext.LabelValue(labels, "topic"); t == topic {
			*field(s) += v
		}
		return nil
	}
}

func sampleErr(err error, cpu bool) error {
	if err == nil && !cpu {
		err = fmt.Errorf("no process_cpu_seconds_total in the metrics")
	}
	return err
}
