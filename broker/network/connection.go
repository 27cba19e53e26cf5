package network

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moldau/moldau/kapi"
)

const connReadBufferSize = 4096

type connState uint8

const (
	stateIdle connState = iota // waiting for the next request
	stateBusy                  // reading, queueing, muted or writing
)

// aLongTimeAgo is a deadline in the past, to interrupt blocking I/O.
var aLongTimeAgo = time.Unix(1, 0)

var errForced = errors.New("connection closed by a forced shutdown")

// connection is one client connection, served by one goroutine (serve):
// read a request, queue it, wait (muted) for its response, write it.
type connection struct {
	server    *SocketServer
	processor *processor
	nc        net.Conn
	br        *bufio.Reader
	raw       syscall.RawConn // lazily, for sendfile
	id        string          // Kafka's connection id
	peer      string
	addr      netip.Addr // the peer's IP, for the per-IP quota and log limits
	// admitted: the connection quotas counted this connection.
	admitted bool

	// respCh carries the response of the request in flight; capacity 1
	// and at most one request in flight, so respond never blocks.
	respCh chan *kapi.Response
	// wake ends a throttle's mute early when the connection drains
	// (capacity 1, sent without blocking).
	wake         chan struct{}
	lastClientID string // interned: clients send the same id every time
	sizeBuf      [4]byte
	// receiveLimited: the read deadline of the request being read is
	// the receive timeout, not connections.max.idle.ms.
	receiveLimited bool

	// principal is the connection's ("User:ANONYMOUS" on a PLAINTEXT
	// listener), set by authenticate before the first request.
	principal string
	// protocol is the listener's security protocol (PLAINTEXT, SSL,
	// SASL_PLAINTEXT, SASL_SSL); tokenAuth: the SASL login used a
	// delegation token. Both set before the first request is read.
	protocol  string
	tokenAuth bool
	// sasl is the SASL state on a SASL listener (nil otherwise).
	sasl *saslConn

	// why is the reason the connection closes (closed* constants), set
	// by the serving goroutine before it returns.
	why string

	// lastActive is when the last request ended (ns since the server's
	// epoch): the least recently used go first when max.connections is
	// lowered.
	lastActive atomic.Int64
	// inFlight is the request handed to the handlers and not yet
	// answered, for the shutdown's warning.
	inFlight atomic.Pointer[request]

	mu       sync.Mutex
	state    connState
	draining bool // finish the request in flight, then close
	forced   bool // stop now
	evicted  bool // closed to bring the broker under max.connections
	closed   bool // serve returned; late responses are released
}

func (c *connection) idleDeadline() time.Time {
	if d := c.server.cfg.ConnectionsMaxIdle; d > 0 {
		return time.Now().Add(d)
	}
	return time.Time{}
}

// awaitRequest marks the connection idle and arms the idle deadline; false
// if the connection must close instead.
func (c *connection) awaitRequest() bool {
	c.lastActive.Store(int64(time.Since(c.server.epoch)))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		return false
	}
	c.state = stateIdle
	_ = c.nc.SetReadDeadline(c.idleDeadline())
	return true
}

// beginRequest marks the connection busy (a drain lets it finish) and arms
// the deadline for the rest of the frame: connections.max.idle.ms from
// now, or the receive timeout from the frame's first byte (plus the time
// it waited for memory), whichever is first.
func (c *connection) beginRequest(first time.Time, waited time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forced {
		return false
	}
	c.state = stateBusy
	deadline := c.idleDeadline()
	c.receiveLimited = false
	if d := time.Duration(c.server.receiveTimeout.Load()); d > 0 {
		if rd := first.Add(d + waited); deadline.IsZero() || rd.Before(deadline) {
			deadline = rd
			c.receiveLimited = true
		}
	}
	_ = c.nc.SetReadDeadline(deadline)
	return true
}

func (c *connection) armWrite() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forced {
		return false
	}
	_ = c.nc.SetWriteDeadline(c.idleDeadline())
	return true
}

func (c *connection) drain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	c.wakeUp()
	if c.state == stateIdle {
		_ = c.nc.SetReadDeadline(aLongTimeAgo)
	}
}

// evict closes the connection to bring the broker under max.connections:
// now if it is waiting for a request, else after the request in flight.
// It reports whether it did (false if the connection was closing anyway).
func (c *connection) evict() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.evicted || c.draining || c.closed {
		return false
	}
	c.evicted = true
	c.draining = true
	c.wakeUp()
	if c.state == stateIdle {
		_ = c.nc.SetReadDeadline(aLongTimeAgo)
	}
	return true
}

// isIdle reports whether the connection waits for its next request.
func (c *connection) isIdle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == stateIdle && !c.draining
}

func (c *connection) force() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	c.forced = true
	c.wakeUp()
	_ = c.nc.SetDeadline(aLongTimeAgo)
}

func (c *connection) wakeUp() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// throttle mutes the connection for d after a throttled response
// (KIP-219): nothing is read from it meanwhile, so the client's next
// request waits in its socket. False if the connection drains or the
// server is forced down meanwhile.
func (c *connection) throttle(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.wake:
		return false
	case <-c.server.forced:
		return false
	}
}

// serve is the connection's goroutine.
func (c *connection) serve() {
	defer c.close()
	if !c.authenticate() {
		return
	}
	for c.serveRequest() {
	}
}

// serveRequest serves one request; false closes the connection.
func (c *connection) serveRequest() bool {
	s := c.server
	if c.sasl != nil && c.sasl.stage == saslRaw {
		return c.serveSaslRaw()
	}
	if !c.awaitRequest() {
		c.why = c.drainReason()
		return false
	}
	// The first byte may take connections.max.idle.ms; the rest of the
	// frame, the receive timeout.
	if _, err := io.ReadFull(c.br, c.sizeBuf[:1]); err != nil {
		c.readFailed(err, true)
		return false
	}
	r, ok := c.readRequest(time.Now())
	if !ok {
		return false
	}
	if c.sasl != nil {
		if c.saslExpired(r.Received) && r.APIKey != kapi.SaslHandshakeKey {
			s.freeFrame(r)
			c.why = closedSessionExpired
			s.log.Debug("SASL session expired without re-authentication, closing connection",
				"peer", c.peer, "conn", c.id, "principal", c.principal, "request", apiName(r.APIKey))
			return false
		}
		if c.saslIntercepts(r) {
			return c.serveSasl(r)
		}
	}
	busy := c.processor.busy.begin()
	c.inFlight.Store(r)
	defer c.inFlight.Store(nil)
	ok = s.channel.sendRequest(r, s.forced)
	c.processor.busy.end(busy)
	if !ok {
		c.why = closedByShutdown
		s.freeFrame(r)
		return false
	}

	// Muted until the response comes back.
	var resp *kapi.Response
	select {
	case resp = <-c.respCh:
		c.inFlight.Store(nil)
	case <-s.forced:
		// The handler may still be reading the frame: leave it to
		// the garbage collector (its bytes go back to the pool), and
		// its late response to close.
		s.pool.Release(r.reserved)
		s.pool.Return(r.taken)
		c.why = closedByShutdown
		return false
	}

	busy = c.processor.busy.begin()
	// The response counts in the pool while it is written (it exists
	// already, so it does not wait).
	respBytes := int64(len(resp.Buf))
	s.pool.Take(respBytes)
	sendStart := time.Now()
	err := c.writeResponse(resp)
	sendEnd := time.Now()
	throttle := resp.Throttle
	release(resp)
	s.pool.Return(respBytes)
	s.freeFrame(r)
	c.processor.busy.end(busy)
	if s.metrics != nil {
		s.metrics.observeRequest(r, s.epoch, sendStart, sendEnd)
	}
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		// Kafka's kafka.request.logger at DEBUG.
		s.log.Debug("completed request", "request", apiName(r.APIKey), "version", r.APIVersion,
			"correlation_id", r.CorrelationID, "client_id", r.ClientID, "principal", c.principal,
			"listener", c.processor.listener, "conn", c.id, "total_ms", sendEnd.Sub(r.Received).Milliseconds())
	}
	if err != nil {
		c.why = closedByShutdown
		if err != errForced {
			c.why = closedIOError
			s.log.Debug("writing response failed, closing connection",
				"peer", c.peer, "conn", c.id, "request", apiName(r.APIKey), "err", err)
		}
		return false
	}
	if resp.Close {
		c.why = closedByHandler
		level := slog.LevelDebug
		if s.connLog.refused(resp.CloseReason) {
			level = slog.LevelInfo // first time in this summary interval
		}
		s.log.Log(context.Background(), level, "closing connection as the request handler asked",
			"peer", c.peer, "conn", c.id, "listener", c.processor.listener, "principal", c.principal, "client_id", r.ClientID,
			"request", apiName(r.APIKey), "version", r.APIVersion, "reason", resp.CloseReason)
		return false
	}
	if throttle > 0 && !c.throttle(throttle) {
		c.why = c.drainReason()
		select {
		case <-s.forced:
			c.why = closedByShutdown
		default:
		}
		return false
	}
	return true
}

// drainReason is why a draining connection closes.
func (c *connection) drainReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.evicted {
		return closedMaxConnections
	}
	return closedByShutdown
}

// close ends the connection: late responses are released from now on.
func (c *connection) close() {
	c.mu.Lock()
	c.closed = true
	select {
	case resp := <-c.respCh:
		release(resp)
	default:
	}
	c.mu.Unlock()
	_ = c.nc.Close()
	c.processor.unregister(c)
	s := c.server
	if c.admitted {
		s.quotas.release(c.processor.listener, c.addr)
	}
	c.mu.Lock()
	evicted := c.evicted
	c.mu.Unlock()
	if evicted {
		s.evicting.Add(-1)
	}
	why := c.why
	if why == "" {
		why = closedIOError
	}
	if why == closedByShutdown && c.processor.isRetired() {
		why = closedProcessorRemoved
	}
	s.connLog.closed1(c, why)
	if s.limits != nil {
		s.limits.closeReason.WithLabelValues(c.processor.listener, why).Inc()
	}
	s.notifyDisconnect(c.id)
}

// respond is the request's respond function, handed to the handler.
func (r *request) respond(resp *kapi.Response) { r.deliver(resp, false) }

// deliver hands resp to the connection, once per request. Later calls are
// dropped (and logged unless the call comes from the panic handler).
func (r *request) deliver(resp *kapi.Response, afterPanic bool) {
	c := r.conn
	if resp == nil {
		resp = &kapi.Response{Close: true, CloseReason: "request handler returned a nil response"}
	}
	if !r.respondOnce.CompareAndSwap(false, true) {
		if !afterPanic {
			c.server.log.Error("respond called twice for a request; dropping the second response",
				"request", apiName(r.APIKey), "correlation_id", r.CorrelationID, "conn", r.ConnID)
		}
		release(resp)
		return
	}
	r.responded = time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		release(resp)
		return
	}
	c.respCh <- resp // never blocks: capacity 1, one request in flight
}
