package network

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"
)

// ChannelBuilder secures and authenticates a listener's connections
// (Kafka's ChannelBuilder: SslChannelBuilder, SaslChannelBuilder).
// broker/security's SslFactory is the SSL one, its SaslChannelBuilder the
// SASL one (see SaslChannelBuilder in sasl.go); a PLAINTEXT listener has
// none and its principal is anonymousPrincipal.
type ChannelBuilder interface {
	// SecurityProtocol names it (SSL).
	SecurityProtocol() string
	// Authenticate runs on an accepted connection, in the connection's
	// goroutine, before its first request; ctx ends at the handshake
	// deadline. It returns the connection to serve (a *tls.Conn over
	// nc) and the principal ("User:..."); an error closes nc.
	Authenticate(ctx context.Context, nc net.Conn) (net.Conn, string, error)
}

// anonymousPrincipal is a connection's principal without authentication
// (Kafka's KafkaPrincipal.ANONYMOUS).
const anonymousPrincipal = "User:ANONYMOUS"

// logAuthentication is the peerLog kind of failed handshakes.
const logAuthentication = "authentication_failed"

// authenticate runs the listener's channel builder, if any, bounded by
// the request receive timeout (connections.max.idle.ms if that is off):
// a handshake is a request as far as a slow peer is concerned. A drain or
// a forced shutdown interrupts it through the socket's deadline. False:
// the connection closes (c.why set, logged once per peer and minute).
func (c *connection) authenticate() bool {
	s := c.server
	b := s.builders[c.processor.listener]
	if b == nil {
		c.principal, c.protocol = anonymousPrincipal, "PLAINTEXT"
		return true
	}
	c.protocol = b.SecurityProtocol()
	limit := time.Duration(s.receiveTimeout.Load())
	if limit <= 0 {
		limit = s.cfg.ConnectionsMaxIdle
	}
	ctx := context.Background()
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	c.mu.Lock()
	raw := c.nc
	c.mu.Unlock()
	start := time.Now()
	nc, principal, err := b.Authenticate(ctx, raw)
	if err != nil {
		c.authenticationFailed(b, err, time.Since(start))
		return false
	}
	c.mu.Lock()
	c.nc = nc
	c.br.Reset(nc)
	c.principal = principal
	forced := c.forced
	c.mu.Unlock()
	if sb, ok := b.(SaslChannelBuilder); ok {
		// Authenticated once a SASL login completes (sasl.go).
		c.sasl = &saslConn{b: sb}
		return !forced
	}
	if s.limits != nil {
		s.limits.authentications.WithLabelValues(c.processor.listener, "success").Inc()
	}
	return !forced
}

func (c *connection) authenticationFailed(b ChannelBuilder, err error, took time.Duration) {
	s := c.server
	c.mu.Lock()
	draining := c.draining
	c.mu.Unlock()
	if draining {
		c.why = closedByShutdown
		return
	}
	c.why = closedAuthentication
	if s.limits != nil {
		s.limits.authentications.WithLabelValues(c.processor.listener, "failure").Inc()
	}
	if !s.peerLogAllow(c.addr, logAuthentication) {
		return
	}
	attrs := []any{"peer", c.peer, "conn", c.id, "listener", c.processor.listener,
		"security_protocol", b.SecurityProtocol(), "took", took.Round(time.Millisecond), "err", err}
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded):
		attrs = append(attrs, "hint", "the handshake did not finish in time")
	case strings.Contains(err.Error(), "first record does not look like a TLS handshake"):
		attrs = append(attrs, "hint", "the client does not speak TLS: a PLAINTEXT client on an SSL listener?")
	}
	s.log.Info("failed authentication, closing connection (logged once per peer and minute)", attrs...)
}

// looksLikeTLS tells whether a frame's size prefix is the start of a TLS
// record (a handshake, 0x16 0x03): a TLS client on a PLAINTEXT listener.
func looksLikeTLS(size [4]byte) bool { return size[0] == 0x16 && size[1] == 0x03 }
