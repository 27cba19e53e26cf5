package network

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/summary"
)

// Metrics are the socket server's and handler pool's Prometheus metrics,
// named as Kafka's JMX Prometheus exporter names Kafka's MBeans, so that
// existing dashboards work. Build it with NewMetrics on the broker's own
// registry; several brokers in one process each have their own.
type Metrics struct {
	// kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent
	networkProcessorAvgIdle prometheus.Gauge
	// kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent
	requestHandlerAvgIdle prometheus.Gauge

	// kafka.network:type=RequestMetrics,name=RequestsPerSec,request=X,version=Y
	requests *prometheus.CounterVec
	// kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=X,error=Y
	errs        *prometheus.CounterVec
	errCounters sync.Map // api key << 16 | error code -> prometheus.Counter
	// kafka.network:type=RequestMetrics,name=*TimeMs,request=X
	totalTime, requestQueueTime, localTime, remoteTime, responseQueueTime, responseSendTime *summary.Vec

	// kafka.network:type=RequestChannel,name=RequestQueueSize
	queueLen atomic.Pointer[func() int]
	// kafka.server:type=socket-server-metrics,listener=X,name=connection-count
	connectionCount *prometheus.GaugeVec
	// ...,name=connection-creation-total and connection-close-total
	connectionCreation, connectionClose *prometheus.CounterVec

	// limits: the memory pool, connection quotas, invalid frames.
	limits *limitMetrics

	mu     sync.RWMutex
	perAPI map[int32]*apiMetrics // key<<16 | version
}

// apiMetrics caches the children of the vectors for one (API key, version).
type apiMetrics struct {
	requests                                                                            prometheus.Counter
	totalTime, requestQueueTime, localTime, remoteTime, responseQueueTime, responseSend prometheus.Observer
}

// summaryObjectives are the percentiles Kafka's JMX exporter reports for a
// Yammer histogram (50th, 75th, 95th, 98th, 99th, 999th).
var summaryObjectives = []float64{0.5, 0.75, 0.95, 0.98, 0.99, 0.999}

// NewMetrics creates the metrics and registers them, plus the Go runtime
// and process collectors, on reg. A collector already registered on reg
// (a second Metrics on the same registry) is shared, not an error.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{perAPI: make(map[int32]*apiMetrics)}
	m.networkProcessorAvgIdle = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kafka_network_socketserver_networkprocessoravgidlepercent",
		Help: "Average over network processors of the fraction of time their connections are not framing, queueing or writing (0..1), over a sliding window of about 5 s.",
	}))
	m.requestHandlerAvgIdle = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent",
		Help: "Fraction of time the request handler goroutines wait for a request (0..1), over a sliding window of about 5 s.",
	}))
	m.networkProcessorAvgIdle.Set(1)
	m.requestHandlerAvgIdle.Set(1)
	m.requests = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_requests_total",
		Help: "Requests served, by API name and version.",
	}, []string{"request", "version"}))
	m.errs = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_errors_total",
		Help: "Error codes returned in responses, by API name and error name.",
	}, []string{"request", "error"}))
	// Six observations per request: summary.Vec costs a few atomic adds
	// each, where client_golang's Summary cost about 0.5 µs.
	newSummary := func(name, help string) *summary.Vec {
		return register(reg, summary.NewVec(summary.Opts{
			Name:       name,
			Help:       help,
			Objectives: summaryObjectives,
			Unit:       0.001, // ms to the µs
			MaxAge:     5 * time.Minute,
			AgeBuckets: 5,
		}, []string{"request"}))
	}
	m.totalTime = newSummary("kafka_network_requestmetrics_totaltimems", "Time from the request's last byte read to its response's last byte written, in ms.")
	m.requestQueueTime = newSummary("kafka_network_requestmetrics_requestqueuetimems", "Time a request waits in the request channel, in ms.")
	m.localTime = newSummary("kafka_network_requestmetrics_localtimems", "Time a handler goroutine spends in Handle, in ms.")
	m.remoteTime = newSummary("kafka_network_requestmetrics_remotetimems", "Time from Handle returning to respond (delayed operations), in ms.")
	m.responseQueueTime = newSummary("kafka_network_requestmetrics_responsequeuetimems", "Time from respond to the connection starting to write, in ms.")
	m.responseSendTime = newSummary("kafka_network_requestmetrics_responsesendtimems", "Time writing the response, in ms.")
	register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kafka_network_requestchannel_requestqueuesize",
		Help: "Requests waiting in the request channel for a handler.",
	}, func() float64 {
		if f := m.queueLen.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	}))
	m.connectionCount = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kafka_server_socketservermetrics_connection_count",
		Help: "Open client connections, by listener.",
	}, []string{"listener"}))
	m.connectionCreation = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socketservermetrics_connection_creation_total",
		Help: "Connections accepted, by listener.",
	}, []string{"listener"}))
	m.connectionClose = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_socketservermetrics_connection_close_total",
		Help: "Connections closed, by listener.",
	}, []string{"listener"}))
	m.limits = newLimitMetrics(reg)
	register(reg, collectors.NewGoCollector())
	register(reg, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// register registers c on reg and returns it, or the collector already
// registered under the same descriptors. Any other error is a programming
// error (a name clash with different labels) and panics, as MustRegister.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// RecordErrors counts n of an error code in responses of apiKey (Kafka's
// ErrorsPerSec, labelled with the error's name, NONE included), for kapi,
// which alone knows the codes it returns.
func (m *Metrics) RecordErrors(apiKey, code int16, n int) {
	if m == nil {
		return
	}
	key := int32(apiKey)<<16 | int32(uint16(code))
	c, ok := m.errCounters.Load(key)
	if !ok {
		name := "NONE"
		switch {
		case code == kerr.NotLeaderForPartition.Code:
			name = "NOT_LEADER_OR_FOLLOWER" // Kafka's name since KIP-392; kerr keeps the old one
		case code != 0:
			name = kerr.TypedErrorForCode(code).Message // UNKNOWN_SERVER_ERROR if unknown
		}
		c, _ = m.errCounters.LoadOrStore(key, m.errs.WithLabelValues(kmsg.NameForKey(apiKey), name))
	}
	c.(prometheus.Counter).Add(float64(n))
}

func (m *Metrics) api(key, version int16) *apiMetrics {
	id := int32(key)<<16 | int32(uint16(version))
	m.mu.RLock()
	a := m.perAPI[id]
	m.mu.RUnlock()
	if a != nil {
		return a
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if a = m.perAPI[id]; a != nil {
		return a
	}
	name := kmsg.NameForKey(key)
	a = &apiMetrics{
		requests:          m.requests.WithLabelValues(name, strconv.Itoa(int(version))),
		totalTime:         m.totalTime.WithLabelValues(name),
		requestQueueTime:  m.requestQueueTime.WithLabelValues(name),
		localTime:         m.localTime.WithLabelValues(name),
		remoteTime:        m.remoteTime.WithLabelValues(name),
		responseQueueTime: m.responseQueueTime.WithLabelValues(name),
		responseSend:      m.responseSendTime.WithLabelValues(name),
	}
	m.perAPI[id] = a
	return a
}

// observeRequest records a completed request (written, dropped for
// NoResponse, or answered with Close).
// LocalTimeMs is recorded by the handler pool when Handle returns.
func (m *Metrics) observeRequest(r *request, epoch, sendStart, sendEnd time.Time) {
	if m == nil {
		return
	}
	a := m.api(r.APIKey, r.APIVersion)
	a.totalTime.Observe(ms(sendEnd.Sub(r.Received)))
	a.requestQueueTime.Observe(ms(r.dequeued.Sub(r.Received)))
	var remote time.Duration // 0 when respond was called inside Handle
	if h := r.handledAt.Load(); h != 0 {
		remote = max(0, r.responded.Sub(epoch.Add(time.Duration(h))))
	}
	a.remoteTime.Observe(ms(remote))
	a.responseQueueTime.Observe(ms(sendStart.Sub(r.responded)))
	a.responseSend.Observe(ms(sendEnd.Sub(sendStart)))
	a.requests.Inc()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// busyMeter accumulates the busy time of a group of goroutines, several of
// which may be busy at once. The busy total at time t is
// done + active*t - sum(start of each active interval), so an interval
// still in progress counts up to the moment it is read.
type busyMeter struct {
	epoch time.Time // monotonic origin

	mu       sync.Mutex
	done     int64 // ns of finished intervals
	active   int64 // intervals in progress
	startSum int64 // sum of their starts, ns since epoch
}

func newBusyMeter(epoch time.Time) *busyMeter { return &busyMeter{epoch: epoch} }

// begin starts a busy interval and returns its start for end.
func (b *busyMeter) begin() int64 {
	now := int64(time.Since(b.epoch))
	b.mu.Lock()
	b.active++
	b.startSum += now
	b.mu.Unlock()
	return now
}

func (b *busyMeter) end(start int64) {
	now := int64(time.Since(b.epoch))
	b.mu.Lock()
	b.active--
	b.startSum -= start
	b.done += now - start
	b.mu.Unlock()
}

// total is the busy time so far, in ns, at now (ns since epoch).
func (b *busyMeter) total(now int64) int64 {
	b.mu.Lock()
	t := b.done + b.active*now - b.startSum
	b.mu.Unlock()
	return t
}

// idleWindow turns cumulative busy totals into an idle fraction over a
// sliding window of the last n samples.
type idleWindow struct {
	at   []int64   // sample times, ns since epoch
	busy [][]int64 // per sample, the busy total of each meter
	next int
	full bool
}

func newIdleWindow(samples, meters int) *idleWindow {
	w := &idleWindow{at: make([]int64, samples), busy: make([][]int64, samples)}
	for i := range w.busy {
		w.busy[i] = make([]int64, meters)
	}
	return w
}

// add records a sample and returns, for each meter, its busy time and the
// wall time since the oldest sample in the window.
func (w *idleWindow) add(now int64, meters []*busyMeter, fn func(i int, busy, wall int64)) {
	cur := w.next
	w.at[cur] = now
	for i, m := range meters {
		w.busy[cur][i] = m.total(now)
	}
	oldest := 0
	if w.full {
		oldest = (cur + 1) % len(w.at)
	}
	w.next = (cur + 1) % len(w.at)
	if w.next == 0 {
		w.full = true
	}
	wall := now - w.at[oldest]
	if wall <= 0 {
		return
	}
	for i := range meters {
		fn(i, w.busy[cur][i]-w.busy[oldest][i], wall)
	}
}

func clamp01(f float64) float64 {
	switch {
	case f < 0:
		return 0
	case f > 1:
		return 1
	}
	return f
}
