package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
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
	processor *Processor
	nc        net.Conn
	br        *bufio.Reader
	raw       syscall.RawConn // lazily, for sendfile
	id        string          // Kafka's connection id
	peer      string

	// respCh carries the response of the request in flight; capacity 1
	// and at most one request in flight, so respond never blocks.
	respCh       chan *kapi.Response
	lastClientID string // interned: clients send the same id every time
	sizeBuf      [4]byte

	// why is the reason the connection closes (closed* constants), set
	// by the serving goroutine before it returns.
	why string

	mu       sync.Mutex
	state    connState
	draining bool // finish the request in flight, then close
	forced   bool // stop now
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
// the deadline for the rest of the frame.
func (c *connection) beginRequest() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forced {
		return false
	}
	c.state = stateBusy
	_ = c.nc.SetReadDeadline(c.idleDeadline())
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
	if c.state == stateIdle {
		_ = c.nc.SetReadDeadline(aLongTimeAgo)
	}
}

func (c *connection) force() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	c.forced = true
	_ = c.nc.SetDeadline(aLongTimeAgo)
}

// serve is the connection's goroutine.
func (c *connection) serve() {
	defer c.close()
	for c.serveRequest() {
	}
}

// serveRequest serves one request; false closes the connection.
func (c *connection) serveRequest() bool {
	s := c.server
	if !c.awaitRequest() {
		c.why = closedByShutdown
		return false
	}
	if _, err := io.ReadFull(c.br, c.sizeBuf[:]); err != nil {
		c.readFailed(err, true)
		return false
	}
	busy := c.processor.busy.begin()
	r, ok := c.readRequest(c.sizeBuf)
	if ok {
		ok = s.channel.sendRequest(r, s.forced)
		if !ok {
			c.why = closedByShutdown
			s.frames.put(r.frame)
		}
	}
	c.processor.busy.end(busy)
	if !ok {
		return false
	}

	// Muted until the response comes back.
	var resp *kapi.Response
	select {
	case resp = <-c.respCh:
	case <-s.forced:
		// The handler may still be reading the frame: leave it to
		// the garbage collector, and its late response to close.
		c.why = closedByShutdown
		return false
	}

	busy = c.processor.busy.begin()
	sendStart := time.Now()
	err := c.writeResponse(resp)
	sendEnd := time.Now()
	release(resp)
	s.frames.put(r.frame)
	r.frame = nil
	c.processor.busy.end(busy)
	if s.metrics != nil {
		s.metrics.observeRequest(r, s.epoch, sendStart, sendEnd)
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
			"peer", c.peer, "conn", c.id, "listener", c.processor.listener, "client_id", r.ClientID,
			"request", apiName(r.APIKey), "version", r.APIVersion, "reason", resp.CloseReason)
		return false
	}
	return true
}

// readRequest reads the frame whose size prefix is sizeBuf and parses its
// header; false closes the connection (already logged).
func (c *connection) readRequest(sizeBuf [4]byte) (*request, bool) {
	s := c.server
	if !c.beginRequest() {
		c.why = closedByShutdown
		return nil, false
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 0 || size > s.cfg.SocketRequestMaxBytes {
		c.why = closedBadFrame
		s.log.Warn("invalid request size, closing connection",
			"peer", c.peer, "conn", c.id, "listener", c.processor.listener,
			"size", size, "socket.request.max.bytes", s.cfg.SocketRequestMaxBytes)
		return nil, false
	}
	fb, err := s.frames.read(c.br, int(size))
	if err != nil {
		c.readFailed(err, false)
		return nil, false
	}
	received := time.Now()
	h, body, err := parseRequestHeader(fb.b)
	if errors.Is(err, errUnknownAPIKey) && slices.Contains(s.cfg.PrivateAPIKeys, h.APIKey) {
		// A Moldau-private key (the metadata quorum's messages): a v1
		// header, parsed as far as the client id.
		h, body, err = parsePrivateHeader(fb.b)
	}
	if err != nil {
		c.why = closedBadFrame
		s.log.Warn("invalid request header, closing connection",
			"peer", c.peer, "conn", c.id, "listener", c.processor.listener, "err", err,
			"size", size, "api_key", h.APIKey, "api_version", h.APIVersion,
			"correlation_id", h.CorrelationID, "client_id", string(h.ClientID))
		s.frames.put(fb)
		return nil, false
	}
	if string(h.ClientID) != c.lastClientID {
		c.lastClientID = string(h.ClientID)
	}
	r := &request{
		Request: kapi.Request{
			APIKey:        h.APIKey,
			APIVersion:    h.APIVersion,
			CorrelationID: h.CorrelationID,
			ClientID:      c.lastClientID,
			Body:          body,
			Size:          int(size),
			Listener:      c.processor.listener,
			ClientAddr:    c.nc.RemoteAddr(),
			ConnID:        c.id,
			Received:      received,
		},
		conn:  c,
		frame: fb,
	}
	r.respondFn = r.respond
	return r, true
}

// readFailed logs why a read ended the connection; waiting: the read was
// waiting for the next request (rather than reading one).
func (c *connection) readFailed(err error, waiting bool) {
	s := c.server
	c.mu.Lock()
	draining := c.draining
	c.mu.Unlock()
	var ne net.Error
	switch {
	case draining:
		// Shutdown interrupted the read.
		c.why = closedByShutdown
	case errors.Is(err, io.EOF) && waiting:
		c.why = closedByPeer
	case errors.As(err, &ne) && ne.Timeout():
		c.why = closedIdle
		s.log.Debug("closing idle connection", "peer", c.peer, "conn", c.id,
			"connections.max.idle.ms", s.cfg.ConnectionsMaxIdle.Milliseconds(), "mid_request", !waiting)
	default:
		c.why = closedIOError
		s.log.Debug("connection read failed", "peer", c.peer, "conn", c.id, "mid_request", !waiting, "err", err)
	}
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
	why := c.why
	if why == "" {
		why = closedIOError
	}
	if why == closedByShutdown && c.processor.isRetired() {
		why = closedProcessorRemoved
	}
	c.server.connLog.closed1(c, why)
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
