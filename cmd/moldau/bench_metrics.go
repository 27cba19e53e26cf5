package main

import (
	"bufio"
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return brokerSample{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return brokerSample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return brokerSample{}, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	return parseBrokerSample(resp.Body, topic)
}

// parseBrokerSample reads a brokerSample for topic from a Prometheus text
// exposition; process_cpu_seconds_total must be there.
func parseBrokerSample(r io.Reader, topic string) (brokerSample, error) {
	var s brokerSample
	cpu := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, labels, value, ok := promtext.SplitSample(sc.Text())
		field, known := brokerMetrics[name]
		if !ok || !known {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return s, fmt.Errorf("metric %s: %w", name, err)
		}
		if name == "process_cpu_seconds_total" {
			s.cpuSeconds, cpu = v, true
		} else if t, _ := promtext.LabelValue(labels, "topic"); t == topic {
			*field(&s) += v
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if !cpu {
		return s, fmt.Errorf("no process_cpu_seconds_total in the metrics")
	}
	return s, nil
}
