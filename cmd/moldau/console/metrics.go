package console

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/moldau/moldau/cmd/moldau/promtext"
)

// The few broker totals the console reads from a Prometheus /metrics page
// (Moldau's names, which are Kafka's JMX names flattened).
var metricNames = map[string]func(*Metrics) *float64{
	"kafka_server_brokertopicmetrics_bytesin_total":             func(m *Metrics) *float64 { return &m.BytesIn },
	"kafka_server_brokertopicmetrics_bytesout_total":            func(m *Metrics) *float64 { return &m.BytesOut },
	"kafka_server_brokertopicmetrics_messagesin_total":          func(m *Metrics) *float64 { return &m.MessagesIn },
	"kafka_server_brokertopicmetrics_replicationbytesout_total": func(m *Metrics) *float64 { return &m.ReplicationBytesOut },
}

// metricsSample is the previous scrape of one URL, for rates.
type metricsSample struct {
	at time.Time
	m  Metrics
}

// maxMetricsBytes bounds how much of one /metrics page is read.
const maxMetricsBytes = 8 << 20

// scrapeMetrics reads every --metrics-url; one that fails gets an error
// and no rates.
func (p *Poller) scrapeMetrics(ctx context.Context) []Metrics {
	out := make([]Metrics, 0, len(p.metrics))
	for _, u := range p.metrics {
		broker, url := metricsTarget(u)
		m := Metrics{URL: url, Broker: broker, BytesInRate: -1, BytesOutRate: -1, MessagesInRate: -1, ReplicationBytesOutRate: -1}
		now := p.now()
		if err := p.scrapeOne(ctx, url, &m); err != nil {
			m.Error = errorText(err)
			delete(p.lastMetrics, u)
			out = append(out, m)
			continue
		}
		if last, ok := p.lastMetrics[u]; ok {
			if dt := now.Sub(last.at).Seconds(); dt > 0 {
				m.BytesInRate = rate(last.m.BytesIn, m.BytesIn, dt)
				m.BytesOutRate = rate(last.m.BytesOut, m.BytesOut, dt)
				m.MessagesInRate = rate(last.m.MessagesIn, m.MessagesIn, dt)
				m.ReplicationBytesOutRate = rate(last.m.ReplicationBytesOut, m.ReplicationBytesOut, dt)
			}
		}
		p.lastMetrics[u] = metricsSample{at: now, m: m}
		out = append(out, m)
	}
	return out
}

// rate is the increase per second, rounded to a tenth so that a steady
// flow does not look like a change every tick; a counter that went down
// (a restart) has no rate.
func rate(a, b, dt float64) float64 {
	if b < a {
		return -1
	}
	r := (b - a) / dt
	return float64(int64(r*10+0.5)) / 10
}

func (p *Poller) scrapeOne(ctx context.Context, url string, m *Metrics) error {
	return promtext.Scrape(ctx, p.httpc, url, maxMetricsBytes, sumMetrics(m))
}

// parseMetrics sums the samples of the metrics in metricNames over their
// labels, from the Prometheus text format.
func parseMetrics(r io.Reader, m *Metrics) error {
	return promtext.Parse(r, sumMetrics(m))
}

// sumMetrics adds each sample of a metric in metricNames to m.
func sumMetrics(m *Metrics) func(name, labels, value string) error {
	return func(name, _, value string) error {
		field, ok := metricNames[name]
		if !ok {
			return nil
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("metric %s: %v", name, err)
		}
		*field(m) += v
		return nil
	}
}
