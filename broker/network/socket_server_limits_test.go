package network

import (
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/kapi"
)

// logBuffer collects log lines (goroutine-safe).
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }

func bufferLogger(buf *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// counterValue sums a counter vector's children whose labels include want.
func counterValue(t testing.TB, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mf := gather(t, reg)[name]
	if mf == nil {
		return 0
	}
	var sum float64
	for _, m := range mf.Metric {
		l := labels(m)
		ok := true
		for k, v := range want {
			ok = ok && l[k] == v
		}
		if ok {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// holdHandler holds requests whose client id is "hold" until release is
// closed, and serves the others as testHandler does.
func holdHandler(release <-chan struct{}, held chan<- int) RequestHandler {
	return testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		if r.ClientID == "hold" {
			held <- len(r.Body)
			<-release
			respond(echoResponse(r.CorrelationID, nil))
			return
		}
		testHandler(ctx, r, respond)
	})
}

// Frames above 16 KiB reserve their size in queued.max.request.bytes
// before their body is read: when it is spent, a connection with a large
// frame waits (muted) while small requests keep being served, and goes on
// as soon as memory comes back. A frame larger than the whole pool waits
// until the pool is idle and is then read alone.
func TestMemoryPoolMutesLargeFrames(t *testing.T) {
	reg := newRegistry()
	release := make(chan struct{})
	held := make(chan int, 4)
	s := startServer(t, holdHandler(release, held), func(c *Config) {
		c.QueuedMaxRequestBytes = 1 << 20
		c.NumIOThreads = 4
		c.Metrics = NewMetrics(reg)
	})
	pool := s.MemoryPool()
	body := make([]byte, 600<<10)

	a := dial(t, s.addr)
	a.Write(echoRequest(1, "hold", body))
	if n := <-held; n != len(body) {
		t.Fatalf("held a %d-byte body", n)
	}
	if pool.Used() < int64(len(body)) {
		t.Fatalf("pool used %d while a %d-byte frame is held", pool.Used(), len(body))
	}
	b := dial(t, s.addr)
	go b.Write(echoRequest(2, "hold", body))
	waitUntil(t, "the second frame to wait for memory", func() bool { return pool.Waiting() == 1 })
	if v := gaugeValue(t, reg, "kafka_network_socketserver_memorypoolwaitingconnections"); v != 1 {
		t.Fatalf("waiting gauge %v", v)
	}
	// Small requests are not muted.
	g := startGoodClient(t, s.addr)
	g.waitProgress(t, 20)

	// An oversized frame (3 MiB > 1 MiB) queues behind the second.
	huge := dial(t, s.addr)
	go huge.Write(echoRequest(3, "hold", make([]byte, 3<<20)))
	waitUntil(t, "the huge frame to wait", func() bool { return pool.Waiting() == 2 })

	close(release) // the first is answered, the second and then the huge one go
	for _, c := range []net.Conn{a, b, huge} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		readFrame(t, c)
	}
	for range 2 {
		<-held
	}
	g.finish(t)
	waitUntil(t, "the pool to be idle", func() bool { return pool.Used() == 0 && pool.Waiting() == 0 })
	if v := counterValue(t, reg, "kafka_server_socketservermetrics_memorypooldepletedtimetotal", nil); v <= 0 {
		t.Fatalf("depleted time %v", v)
	}
}

// A peer dribbling a frame is closed after the receive timeout, logged
// once per peer; time waiting for memory does not count; a good client
// is served throughout.
func TestRequestReceiveTimeout(t *testing.T) {
	reg := newRegistry()
	logs := &logBuffer{}
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) {
		c.RequestReceiveTimeout = 300 * time.Millisecond
		c.Metrics = NewMetrics(reg)
		c.Logger = bufferLogger(logs)
	})
	g := startGoodClient(t, s.addr)
	frame := echoRequest(1, "slow", make([]byte, 100))
	var slow []net.Conn
	for range 5 {
		c := dial(t, s.addr)
		c.Write(frame[:6])
		slow = append(slow, c)
	}
	start := time.Now()
	for _, c := range slow {
		expectClosed(t, c)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("slow senders closed after %v", took)
	}
	g.waitProgress(t, 10)
	g.finish(t)
	waitUntil(t, "five receive timeouts counted", func() bool {
		return counterValue(t, reg, "kafka_server_socketservermetrics_connection_close_reason_total", map[string]string{"reason": "receive_timeout"}) == 5
	})
	if n := logs.count("request not received in time"); n != 1 {
		t.Fatalf("%d log lines for 5 slow senders from one address, want 1:\n%s", n, logs)
	}

	// Dynamic: off, a slow sender survives the old timeout.
	s.SetRequestReceiveTimeout(0)
	c := dial(t, s.addr)
	c.Write(frame[:6])
	time.Sleep(500 * time.Millisecond) // longer than the old timeout: nothing to poll for
	c.Write(frame[6:])
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got := correlationID(readFrame(t, c)); got != 1 {
		t.Fatalf("correlation id %d", got)
	}
}

// Invalid frames close their connection, are counted by reason, and are
// logged once per peer and interval; the summary reports the rest.
func TestInvalidFramesRateLimitedLog(t *testing.T) {
	reg := newRegistry()
	logs := &logBuffer{}
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) {
		c.Metrics = NewMetrics(reg)
		c.Logger = bufferLogger(logs)
	})
	for i := range 40 {
		c := dial(t, s.addr)
		if i%2 == 0 {
			c.Write(binary.BigEndian.AppendUint32(nil, 0x7fffffff))
		} else {
			c.Write(encodeRequest(9999, 0, 1, nil, nil))
		}
		expectClosed(t, c)
	}
	if v := counterValue(t, reg, "kafka_network_socketserver_invalidrequests_total", map[string]string{"reason": "size"}); v != 20 {
		t.Fatalf("size: %v", v)
	}
	if v := counterValue(t, reg, "kafka_network_socketserver_invalidrequests_total", map[string]string{"reason": "unknown_api_key"}); v != 20 {
		t.Fatalf("unknown_api_key: %v", v)
	}
	if n := logs.count("level=WARN"); n != 1 {
		t.Fatalf("%d warnings for 40 bad frames from one address:\n%s", n, logs)
	}
	if v := counterValue(t, reg, "kafka_network_socketserver_suppressedlogs_total", nil); v != 39 {
		t.Fatalf("suppressed %v", v)
	}
	s.Close()
	if !strings.Contains(logs.String(), "log_lines_suppressed=\"invalid_request=39\"") {
		t.Fatalf("summary does not report the suppressed lines:\n%s", logs)
	}
}

func unlimitedQuotas() config.ConnectionQuotas {
	return config.ConnectionQuotas{MaxConnections: math.MaxInt32, MaxConnectionsPerIP: math.MaxInt32, MaxConnectionCreationRate: math.MaxInt32}
}

// readsResponse reports whether c is served an ApiVersions round trip
// within d.
func servedWithin(c net.Conn, d time.Duration) bool {
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	return roundTrip(c, 7) == nil
}

// max.connections.per.ip closes the connection over the limit at once;
// max.connections makes the next connection wait until one closes, and
// lowering it closes the least recently used connections. Both change at
// run time.
func TestConnectionQuotas(t *testing.T) {
	reg := newRegistry()
	q := unlimitedQuotas()
	q.MaxConnectionsPerIP = 3
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) {
		c.ConnectionQuotas = &q
		c.Metrics = NewMetrics(reg)
	})
	var conns []net.Conn
	for range 3 {
		c := dial(t, s.addr)
		if !servedWithin(c, 5*time.Second) {
			t.Fatal("a connection under the limit was not served")
		}
		conns = append(conns, c)
	}
	over := dial(t, s.addr)
	expectClosed(t, over)
	waitUntil(t, "the per-IP close counted", func() bool {
		return counterValue(t, reg, "kafka_server_socketservermetrics_connection_close_reason_total", map[string]string{"reason": "per_ip_limit"}) == 1
	})

	// Raise the per-IP limit, set max.connections to 4.
	q.MaxConnectionsPerIP = math.MaxInt32
	q.MaxConnections = 4
	s.SetConnectionQuotas(q)
	conns = append(conns, dial(t, s.addr))
	if !servedWithin(conns[3], 5*time.Second) {
		t.Fatal("the 4th connection was not served")
	}
	waiting := dial(t, s.addr)
	if servedWithin(waiting, 300*time.Millisecond) {
		t.Fatal("a 5th connection was served over max.connections=4")
	}
	conns[0].Close()
	if !servedWithin(waiting, 5*time.Second) {
		t.Fatal("the waiting connection was not served once a slot was free")
	}
	conns = append(conns[1:], waiting)
	waitConnections(t, s.SocketServer, 4)
	if v := counterValue(t, reg, "kafka_network_acceptor_blocked_seconds_total", nil); v <= 0 {
		t.Fatalf("acceptor blocked time %v", v)
	}

	// Lower it to 2: the two least recently used go.
	for _, c := range conns[2:] {
		servedWithin(c, 5*time.Second) // now the most recently used
	}
	q.MaxConnections = 2
	s.SetConnectionQuotas(q)
	for _, c := range conns[:2] {
		expectClosed(t, c)
	}
	for _, c := range conns[2:] {
		if !servedWithin(c, 5*time.Second) {
			t.Fatal("a recently used connection was closed")
		}
	}
	waitUntil(t, "two evictions counted", func() bool {
		return counterValue(t, reg, "kafka_server_socketservermetrics_connection_close_reason_total", map[string]string{"reason": "max_connections"}) == 2
	})
}

// max.connection.creation.rate delays new connections beyond a burst of
// one second's worth; none is refused.
func TestConnectionCreationRate(t *testing.T) {
	reg := newRegistry()
	q := unlimitedQuotas()
	q.MaxConnectionCreationRate = 20
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) {
		c.ConnectionQuotas = &q
		c.Metrics = NewMetrics(reg)
	})
	for range 30 {
		c := dial(t, s.addr)
		if !servedWithin(c, 5*time.Second) {
			t.Fatal("a throttled connection was not served")
		}
		c.Close()
	}
	if v := counterValue(t, reg, "kafka_server_socketservermetrics_connection_accept_throttled_total", nil); v < 5 {
		t.Fatalf("%v connections throttled of 30 at 20/s", v)
	}
}

// The token bucket: a second's burst, then one per 1/rate.
func TestTokenBucket(t *testing.T) {
	var b tokenBucket
	now := time.Unix(0, 0)
	b.setRate(10, now)
	for i := range 10 {
		if d := b.take(now); d != 0 {
			t.Fatalf("take %d of the burst waited %v", i, d)
		}
	}
	if d := b.take(now); d != 100*time.Millisecond {
		t.Fatalf("11th waits %v", d)
	}
	if d := b.take(now.Add(100 * time.Millisecond)); d != 100*time.Millisecond {
		t.Fatalf("12th waits %v", d)
	}
	b.setRate(math.MaxInt32, now)
	if d := b.take(now); d != 0 {
		t.Fatal("unlimited waited")
	}
}

// peerLog: one line per address and kind per interval, at most
// maxLinesPerKind of a kind, a new interval starts over.
func TestPeerLog(t *testing.T) {
	now := time.Unix(0, 0)
	l := newPeerLog(time.Minute, now)
	a := netip.MustParseAddr("10.0.0.1")
	if !l.allow(a, "x", now) || l.allow(a, "x", now) || !l.allow(a, "y", now) {
		t.Fatal("one line per address and kind")
	}
	logged := 1
	for i := range 300 {
		if l.allow(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), "x", now) {
			logged++
		}
	}
	if logged != maxLinesPerKind {
		t.Fatalf("%d lines of a kind, want %d", logged, maxLinesPerKind)
	}
	if !l.allow(a, "x", now.Add(time.Minute)) {
		t.Fatal("a new interval does not start over")
	}
	if s := l.takeSuppressed(now); s["x"] != 1+300-(maxLinesPerKind-1) {
		t.Fatalf("suppressed %v", s)
	}
}
