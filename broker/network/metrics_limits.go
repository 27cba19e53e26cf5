package network

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/memory"
)

// limitMetrics are the metrics of the socket server's limits: the request
// memory pool (Kafka's MemoryPoolAvailable, MemoryPoolUsed and
// MemoryPoolDepletedTimeTotal), connections closed by reason, invalid
// frames, connection quotas and the log lines rate-limited away.
type limitMetrics struct {
	pool atomic.Pointer[memory.Pool]

	// closeReason counts connections closed, by listener and reason
	// (the closed* constants): idle, receive_timeout, bad_request,
	// max_connections, per_ip_limit, ...
	closeReason *prometheus.CounterVec
	// invalidRequests counts frames refused before the request handler,
	// by listener and reason (size, header, unknown_api_key, ...).
	invalidRequests *prometheus.CounterVec
	// acceptorBlocked is the time acceptors waited for a connection
	// slot or the creation-rate quota (Kafka's AcceptorBlockedPercent,
	// as a total), by listener.
	acceptorBlocked *prometheus.CounterVec
	// acceptThrottled counts connections delayed by
	// max.connection.creation.rate, by listener.
	acceptThrottled *prometheus.CounterVec
	// authentications counts the security handshakes of SSL (later
	// SASL) listeners, by listener and result (success, failure):
	// Kafka's successful-authentication-total and
	// failed-authentication-total.
	authentications *prometheus.CounterVec
	// logsSuppressed counts log lines about peers left out by the
	// per-peer rate limit, by kind.
	logsSuppressed *prometheus.CounterVec
}

func newLimitMetrics(reg prometheus.Registerer) *limitMetrics {
	m := &limitMetrics{}
	poolGauge := func(name, help string, f func(p *memory.Pool) float64) {
		register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if p := m.pool.Load(); p != nil {
				return f(p)
			}
			return 0
		}))
	}
	poolGauge("kafka_network_socketserver_memorypoolavailable",
		"Bytes of queued.max.request.bytes not reserved (negative while responses and decompressed batches take more); 0 when unbounded.",
		func(p *memory.Pool) float64 { return float64(p.Available()) })
	poolGauge("kafka_network_socketserver_memorypoolused",
		"Bytes of queued.max.request.bytes reserved by request frames or taken by responses and decompressed batches.",
		func(p *memory.Pool) float64 { return float64(p.Used()) })
	poolGauge("kafka_network_socketserver_memorypoolwaitingconnections",
		"Connections muted because their next frame does not fit in queued.max.request.bytes.",
		func(p *memory.Pool) float64 { return float64(p.Waiting()) })
	register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "kafka_server_socketservermetrics_memorypooldepletedtimetotal",
		Help: "Total time, in ms, during which a request frame waited for queued.max.request.bytes memory.",
	}, func() float64 {
		if p := m.pool.Load(); p != nil {
			return float64(p.DepletedTime().Milliseconds())
		}
		return 0
	}))
	m.closeReason = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socketservermetrics_connection_close_reason_total",
		Help: "Connections closed (or refused once accepted), by listener and reason: peer, idle, receive_timeout, bad_request, refused, io_error, max_connections, per_ip_limit, authentication_failed, shutdown, processor_removed.",
	}, []string{"listener", "reason"}))
	m.invalidRequests = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_socketserver_invalidrequests_total",
		Help: "Frames refused before the request handler (the connection is closed), by listener and reason: size, header, unknown_api_key, unsupported_version, truncated.",
	}, []string{"listener", "reason"}))
	m.acceptorBlocked = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_acceptor_blocked_seconds_total",
		Help: "Time the acceptor waited before taking a new connection, for max.connections or max.connection.creation.rate, by listener.",
	}, []string{"listener"}))
	m.acceptThrottled = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socketservermetrics_connection_accept_throttled_total",
		Help: "Connections delayed by max.connection.creation.rate, by listener.",
	}, []string{"listener"}))
	m.authentications = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socketservermetrics_authentication_total",
		Help: "Security handshakes of connections to SSL listeners, by listener and result: success, failure (Kafka's successful-authentication-total and failed-authentication-total).",
	}, []string{"listener", "result"}))
	m.logsSuppressed = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_socketserver_suppressedlogs_total",
		Help: "Log lines about misbehaving peers left out by the per-peer rate limit (one line per peer and kind per minute), by kind.",
	}, []string{"kind"}))
	return m
}
