package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
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

// The metric names brokerSample reads.
const (
	metricCPU                = "process_cpu_seconds_total"
	metricRemoteCopyBytes    = "kafka_server_brokertopicmetrics_remotecopybytes_total"
	metricRemoteFetchBytes   = "kafka_server_brokertopicmetrics_remotefetchbytes_total"
	metricRemoteCopyRequests = "kafka_server_brokertopicmetrics_remotecopyrequests_total"
	metricRemoteCopyLagBytes = "kafka_server_brokertopicmetrics_remotecopylagbytes"
	metricRemoteCopyLagSegs  = "kafka_server_brokertopicmetrics_remotecopylagsegments"
)

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
		name, labels, v, ok := parseSampleLine(sc.Text())
		if !ok {
			continue
		}
		var into *float64
		switch name {
		case metricCPU:
			s.cpuSeconds, cpu = v, true
			continue
		case metricRemoteCopyBytes:
			into = &s.remoteCopyBytes
		case metricRemoteFetchBytes:
			into = &s.remoteFetchBytes
		case metricRemoteCopyRequests:
			into = &s.remoteCopyRequests
		case metricRemoteCopyLagBytes:
			into = &s.copyLagBytes
		case metricRemoteCopyLagSegs:
			into = &s.copyLagSegments
		default:
			continue
		}
		if labels["topic"] == topic {
			*into += v
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if !cpu {
		return s, fmt.Errorf("no %s in the metrics", metricCPU)
	}
	return s, nil
}

// parseSampleLine splits a sample line of the text exposition,
// `name{label="value",...} value [timestamp]`; false for comments and
// lines it cannot read. Label values are taken as they are quoted, with
// no escapes (topic names have none).
func parseSampleLine(line string) (name string, labels map[string]string, v float64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return "", nil, 0, false
	}
	name, rest := line[:end], line[end:]
	if rest[0] == '{' {
		rb := strings.IndexByte(rest, '}')
		if rb < 0 {
			return "", nil, 0, false
		}
		labels = map[string]string{}
		for _, kv := range strings.Split(rest[1:rb], ",") {
			k, val, found := strings.Cut(kv, "=")
			if found {
				labels[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(val), `"`)
			}
		}
		rest = rest[rb+1:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return name, labels, v, err == nil
}
