package console

import (
	"strconv"
	"strings"
)

// Bytes on the wires. A --metrics-url names a broker when written
// ID=URL (or when it is the only URL of a one-broker cluster); that
// broker's byte rates are then shared out over its wires in proportion
// to their records per second: bytes in (from producers) over the
// produce wires into it, bytes out (to consumers) over its consume
// wires, replication bytes out over its replicate wires. An estimate,
// exact only when every record is the same size; the page marks it so.

// metricsTarget splits "ID=URL" into the broker id and the URL; a plain
// URL has broker -1.
func metricsTarget(s string) (int32, string) {
	id, url, ok := strings.Cut(s, "=")
	if !ok || strings.Contains(id, "/") {
		return -1, s
	}
	n, err := strconv.ParseInt(id, 10, 32)
	if err != nil || n < 0 {
		return -1, s
	}
	return int32(n), url
}

// applyBytes sets the wires' Bytes from the metrics tied to a broker.
func applyBytes(wires []Wire, metrics []Metrics, brokers []Broker) {
	byBroker := map[int32]Metrics{}
	for _, m := range metrics {
		if m.Broker >= 0 && m.Error == "" {
			byBroker[m.Broker] = m
		}
	}
	if len(metrics) == 1 && metrics[0].Broker < 0 && metrics[0].Error == "" && len(brokers) == 1 {
		byBroker[brokers[0].ID] = metrics[0]
	}
	if len(byBroker) == 0 {
		return
	}
	// The records per second each broker's rate is shared over.
	type share struct {
		broker int32
		rate   func(Metrics) float64
	}
	shareOf := func(w Wire) (share, bool) {
		switch w.Kind {
		case WireProduce:
			id, ok := brokerID(w.To)
			return share{id, func(m Metrics) float64 { return m.BytesInRate }}, ok
		case WireConsume:
			id, ok := brokerID(w.From)
			return share{id, func(m Metrics) float64 { return m.BytesOutRate }}, ok
		case WireReplicate:
			id, ok := brokerID(w.From)
			return share{id, func(m Metrics) float64 { return m.ReplicationBytesOutRate }}, ok
		}
		return share{}, false
	}
	total := map[string]float64{} // kind + broker -> records/s
	for _, w := range wires {
		if sh, ok := shareOf(w); ok && !w.Down {
			total[w.Kind+strconv.Itoa(int(sh.broker))] += w.Rate
		}
	}
	for i := range wires {
		w := &wires[i]
		sh, ok := shareOf(*w)
		m, known := byBroker[sh.broker]
		t := total[w.Kind+strconv.Itoa(int(sh.broker))]
		if !ok || !known || w.Down || t <= 0 || sh.rate(m) <= 0 {
			continue
		}
		w.Bytes = float64(int64(sh.rate(m) * w.Rate / t))
	}
}
