package network

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"time"

	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/kapi"
)

// minReservedFrame: frames up to this size take their bytes from the
// request memory pool without waiting (a connection's next small request
// is never muted for memory); larger ones wait for them. Small frames are
// bounded by max.connections × this size.
const minReservedFrame = 16 << 10

// Kinds of log lines rate-limited per peer (peerLog).
const (
	logInvalidRequest = "invalid_request"
	logReceiveTimeout = "receive_timeout"
	logPerIPLimit     = "per_ip_limit"
)

// readRequest reads the rest of a request whose first size byte arrived
// at first: the size, the memory it needs from the pool (waiting, muted,
// until it fits), the frame, and its header. False closes the connection
// (c.why set, logged).
func (c *connection) readRequest(first time.Time) (*request, bool) {
	s := c.server
	if !c.beginRequest(first, 0) {
		c.why = closedByShutdown
		return nil, false
	}
	if _, err := io.ReadFull(c.br, c.sizeBuf[1:]); err != nil {
		c.readFailed(err, false)
		return nil, false
	}
	size := int32(binary.BigEndian.Uint32(c.sizeBuf[:]))
	if size < 0 || size > s.cfg.SocketRequestMaxBytes {
		attrs := []any{"size", size, "socket.request.max.bytes", s.cfg.SocketRequestMaxBytes}
		if looksLikeTLS(c.sizeBuf) && s.builders[c.processor.listener] == nil {
			attrs = append(attrs, "hint", "this is a TLS handshake: an SSL client on a PLAINTEXT listener?")
		}
		c.badFrame("size", "invalid request size, closing connection", attrs...)
		return nil, false
	}
	if c.saslPending() {
		return c.readPreAuthRequest(size)
	}
	var reserved, taken int64
	if size > minReservedFrame {
		// Muted: the socket is not read until the frame fits.
		reserved = int64(size)
		start := time.Now()
		ok, waited := s.pool.Reserve(reserved, s.forced)
		if !ok {
			c.why = closedByShutdown
			return nil, false
		}
		if waited && !c.beginRequest(first, time.Since(start)) {
			s.pool.Release(reserved)
			c.why = closedByShutdown
			return nil, false
		}
	} else {
		taken = int64(size)
		s.pool.Take(taken)
	}
	busy := c.processor.busy.begin()
	defer c.processor.busy.end(busy)
	// With a bounded pool the bytes are reserved: the frame is allocated
	// whole once its first MiB has arrived. Unbounded, it doubles.
	fb, err := s.frames.read(c.br, int(size), s.pool.Bounded())
	if err != nil {
		s.pool.Release(reserved)
		s.pool.Return(taken)
		c.readFailed(err, false)
		return nil, false
	}
	r := &request{conn: c, frame: fb, reserved: reserved, taken: taken}
	if !c.parseHeader(r) {
		s.freeFrame(r)
		return nil, false
	}
	return r, true
}

// readPreAuthRequest reads a frame before SASL authentication: at most
// sasl.server.max.receive.size, in a buffer grown as bytes arrive.
func (c *connection) readPreAuthRequest(size int32) (*request, bool) {
	if !c.saslSizeOK(size) {
		return nil, false
	}
	busy := c.processor.busy.begin()
	defer c.processor.busy.end(busy)
	b, err := readGrowing(c.br, int(size))
	if err != nil {
		c.readFailed(err, false)
		return nil, false
	}
	r := &request{conn: c, frame: &frameBuf{b: b, class: -1}}
	if !c.parseHeader(r) {
		return nil, false
	}
	return r, true
}

// parseHeader parses r's frame into r.Request; false: an invalid header
// (logged, the connection closes).
func (c *connection) parseHeader(r *request) bool {
	s := c.server
	fb := r.frame
	received := time.Now()
	h, body, err := parseRequestHeader(fb.b)
	if errors.Is(err, errUnknownAPIKey) && slices.Contains(s.cfg.PrivateAPIKeys, h.APIKey) {
		// A Moldau-private key (the metadata quorum's messages): a v1
		// header, parsed as far as the client id.
		h, body, err = parseHeaderV1(fb.b)
	}
	if err != nil {
		c.badFrame(headerErrorReason(err), "invalid request header, closing connection", "err", err,
			"size", len(fb.b), "api_key", h.APIKey, "api_version", h.APIVersion,
			"correlation_id", h.CorrelationID, "client_id", string(h.ClientID))
		return false
	}
	if c.saslPending() && !c.saslAllowed(h.APIKey) {
		c.badFrame("sasl_unexpected_request", "unexpected request before SASL authentication, closing connection",
			"api_key", h.APIKey, "request", apiName(h.APIKey), "api_version", h.APIVersion)
		return false
	}
	if string(h.ClientID) != c.lastClientID {
		c.lastClientID = string(h.ClientID)
	}
	r.Request = kapi.Request{
		APIKey:             h.APIKey,
		APIVersion:         h.APIVersion,
		CorrelationID:      h.CorrelationID,
		ClientID:           c.lastClientID,
		Body:               body,
		Size:               len(fb.b),
		Listener:           c.processor.listener,
		ClientAddr:         c.nc.RemoteAddr(),
		ConnID:             c.id,
		Principal:          c.principal,
		SecurityProtocol:   c.protocol,
		TokenAuthenticated: c.tokenAuth,
		Received:           received,
	}
	r.respondFn = r.respond
	return true
}

func headerErrorReason(err error) string {
	switch {
	case errors.Is(err, errUnknownAPIKey):
		return "unknown_api_key"
	case errors.Is(err, errUnsupportedVer):
		return "unsupported_version"
	case errors.Is(err, errTruncatedHeader):
		return "truncated"
	}
	return "header"
}

// badFrame closes the connection for an invalid frame: counted, and
// logged at most once per peer and minute.
func (c *connection) badFrame(reason, msg string, attrs ...any) {
	s := c.server
	c.why = closedBadFrame
	if s.limits != nil {
		s.limits.invalidRequests.WithLabelValues(c.processor.listener, reason).Inc()
	}
	if s.peerLogAllow(c.addr, logInvalidRequest) {
		s.log.Warn(msg, append([]any{"peer", c.peer, "conn", c.id, "listener", c.processor.listener}, attrs...)...)
	}
}

// readFailed logs why a read ended the connection; waiting: the read was
// waiting for the next request (rather than reading one).
func (c *connection) readFailed(err error, waiting bool) {
	s := c.server
	c.mu.Lock()
	draining, evicted := c.draining, c.evicted
	c.mu.Unlock()
	var ne net.Error
	switch {
	case evicted:
		c.why = closedMaxConnections
	case draining:
		// Shutdown interrupted the read.
		c.why = closedByShutdown
	case errors.Is(err, io.EOF) && waiting:
		c.why = closedByPeer
	case errors.As(err, &ne) && ne.Timeout() && !waiting && c.receiveLimited:
		c.why = closedReceiveTimeout
		if s.peerLogAllow(c.addr, logReceiveTimeout) {
			s.log.Warn("request not received in time, closing connection (logged once per peer and minute)",
				"peer", c.peer, "conn", c.id, "listener", c.processor.listener,
				config.RequestReceiveTimeoutKey, time.Duration(s.receiveTimeout.Load()).Milliseconds())
		}
	case errors.As(err, &ne) && ne.Timeout():
		c.why = closedIdle
		s.log.Debug("closing idle connection", "peer", c.peer, "conn", c.id,
			"connections.max.idle.ms", s.cfg.ConnectionsMaxIdle.Milliseconds(), "mid_request", !waiting)
	default:
		c.why = closedIOError
		s.log.Debug("connection read failed", "peer", c.peer, "conn", c.id, "mid_request", !waiting, "err", err)
	}
}
