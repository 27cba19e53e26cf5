package network

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moldau/moldau/kapi"
)

// SASL on a connection (Kafka's SaslServerAuthenticator and the
// re-authentication of KafkaChannel). A SaslChannelBuilder's connections
// are not authenticated when Authenticate (the TLS handshake of
// SASL_SSL) returns: until a login completes only ApiVersions,
// SaslHandshake and SaslAuthenticate are read, each frame at most the
// builder's MaxReceiveSize (sasl.server.max.receive.size) and read into a
// buffer that grows as bytes arrive; any other request, or a larger
// frame, closes the connection. SaslHandshake and SaslAuthenticate are
// answered in the connection's goroutine (kapi.SaslHandshake,
// kapi.SaslAuthenticate), ApiVersions by the handler as usual. After
// SaslHandshake v0 the tokens come as raw frames (no header) and are
// answered the same way. A failed login is answered after
// FailedAuthenticationDelay (connection.failed.authentication.delay.ms;
// the goroutine waits on a timer, interrupted by a forced shutdown) and
// the connection closes.
//
// Once authenticated, a SaslHandshake starts a re-authentication (KIP-368)
// with a new SaslServer: the principal must not change. A session with a
// lifetime (connections.max.reauth.ms, or the credential's expiry) that
// has expired is closed at its next request other than a
// re-authentication.

// SaslChannelBuilder is a ChannelBuilder whose connections then log in
// with SASL (broker/security's SaslChannelBuilder).
type SaslChannelBuilder interface {
	ChannelBuilder
	// NewSaslServer starts one login.
	NewSaslServer() kapi.SaslServer
	// MaxReceiveSize bounds a frame before authentication.
	MaxReceiveSize() int32
	// FailedAuthenticationDelay delays the answer and close of a
	// failed login.
	FailedAuthenticationDelay() time.Duration
}

type saslStage uint8

const (
	saslHandshake    saslStage = iota // expecting ApiVersions or SaslHandshake
	saslAuthenticate                  // after SaslHandshake v1: SaslAuthenticate
	saslRaw                           // after SaslHandshake v0: raw tokens
	saslDone                          // authenticated
)

// saslConn is a connection's SASL state, owned by its goroutine.
type saslConn struct {
	b      SaslChannelBuilder
	server kapi.SaslServer
	stage  saslStage
	reauth bool      // the login in progress is a re-authentication
	expiry time.Time // the session's end; zero: none
}

// errReauthPrincipal: a re-authentication named another principal.
var errReauthPrincipal = errors.New("re-authentication changed the principal")

// saslPending reports whether the connection must still log in (or is in
// the middle of a re-authentication), when pre-authentication limits
// apply.
func (c *connection) saslPending() bool { return c.sasl != nil && c.sasl.stage != saslDone }

// saslAllowed reports whether a request may be read in the current SASL
// stage; false closes the connection.
func (c *connection) saslAllowed(key int16) bool {
	switch c.sasl.stage {
	case saslHandshake:
		return key == kapi.ApiVersionsKey || key == kapi.SaslHandshakeKey
	case saslAuthenticate:
		return key == kapi.SaslAuthenticateKey
	}
	return true
}

// saslIntercepts reports whether the connection answers r itself: a SASL
// request during a login, or a SaslHandshake that begins a
// re-authentication.
func (c *connection) saslIntercepts(r *request) bool {
	if c.sasl == nil {
		return false
	}
	switch r.APIKey {
	case kapi.SaslHandshakeKey:
		return c.sasl.stage == saslHandshake || c.sasl.stage == saslDone
	case kapi.SaslAuthenticateKey:
		return c.sasl.stage == saslAuthenticate
	}
	return false
}

// saslExpired reports whether the session has expired (the next request
// must be a re-authentication).
func (c *connection) saslExpired(now time.Time) bool {
	return c.sasl != nil && c.sasl.stage == saslDone && !c.sasl.expiry.IsZero() && now.After(c.sasl.expiry)
}

// serveSasl answers a SaslHandshake or SaslAuthenticate; false closes the
// connection (c.why set).
func (c *connection) serveSasl(r *request) bool {
	sc := c.sasl
	var resp *kapi.Response
	var err error
	if r.APIKey == kapi.SaslHandshakeKey {
		if sc.stage == saslDone {
			sc.reauth = true
		}
		sc.server = sc.b.NewSaslServer()
		resp, err = kapi.SaslHandshake(&r.Request, sc.server)
		if err == nil {
			sc.stage = saslAuthenticate
			if r.APIVersion == 0 {
				sc.stage = saslRaw
			}
		}
	} else {
		resp, err = kapi.SaslAuthenticate(&r.Request, sc.server)
		if err == nil && sc.server.Complete() {
			err = c.saslComplete()
		}
	}
	c.server.freeFrame(r)
	if err != nil {
		return c.saslFailed(resp, err)
	}
	return c.writeSasl(resp)
}

// serveSaslRaw reads and answers one raw token after SaslHandshake v0;
// false closes the connection.
func (c *connection) serveSaslRaw() bool {
	token, ok := c.readSaslFrame()
	if !ok {
		return false
	}
	challenge, err := c.sasl.server.Authenticate(token)
	if err == nil && c.sasl.server.Complete() {
		err = c.saslComplete()
	}
	if err != nil {
		// Kafka closes a v0 exchange without an answer.
		return c.saslFailed(nil, err)
	}
	// Every token is answered, an empty challenge too (PLAIN), as
	// Kafka does and kafka-python waits for.
	buf := make([]byte, 4, 4+len(challenge))
	binary.BigEndian.PutUint32(buf, uint32(len(challenge)))
	return c.writeSasl(&kapi.Response{Buf: append(buf, challenge...)})
}

// saslComplete records a successful login: the principal (unchanged by
// a re-authentication) and the session's expiry.
func (c *connection) saslComplete() error {
	sc := c.sasl
	p := sc.server.Principal()
	if sc.reauth && p != c.principal {
		return fmt.Errorf("%w from %s to %s", errReauthPrincipal, c.principal, p)
	}
	c.mu.Lock()
	c.principal = p
	c.mu.Unlock()
	c.tokenAuth = sc.server.TokenAuthenticated()
	sc.stage, sc.reauth, sc.expiry = saslDone, false, time.Time{}
	if d := sc.server.SessionLifetime(); d > 0 {
		sc.expiry = time.Now().Add(d)
	}
	if s := c.server; s.limits != nil {
		s.limits.authentications.WithLabelValues(c.processor.listener, "success").Inc()
	}
	return nil
}

// saslFailed waits FailedAuthenticationDelay, sends resp if any, and
// closes the connection; always false.
func (c *connection) saslFailed(resp *kapi.Response, err error) bool {
	if d := c.sasl.b.FailedAuthenticationDelay(); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.server.forced:
			t.Stop()
		}
	}
	// Counted (and logged) before the answer goes out, so that whoever
	// reads the failure metric after the client saw its answer finds it
	// counted.
	c.authenticationFailed(c.sasl.b, err, 0)
	if resp != nil {
		_ = c.writeResponse(resp)
	}
	return false
}

// writeSasl writes a SASL answer; false closes the connection.
func (c *connection) writeSasl(resp *kapi.Response) bool {
	if err := c.writeResponse(resp); err != nil {
		c.why = closedIOError
		if err == errForced {
			c.why = closedByShutdown
		}
		return false
	}
	return true
}

// readSaslFrame reads a raw token frame (after SaslHandshake v0),
// bounded by MaxReceiveSize and grown as bytes arrive; false closes the
// connection.
func (c *connection) readSaslFrame() ([]byte, bool) {
	if !c.awaitRequest() {
		c.why = c.drainReason()
		return nil, false
	}
	if _, err := io.ReadFull(c.br, c.sizeBuf[:1]); err != nil {
		c.readFailed(err, true)
		return nil, false
	}
	if !c.beginRequest(time.Now(), 0) {
		c.why = closedByShutdown
		return nil, false
	}
	if _, err := io.ReadFull(c.br, c.sizeBuf[1:]); err != nil {
		c.readFailed(err, false)
		return nil, false
	}
	size := int32(binary.BigEndian.Uint32(c.sizeBuf[:]))
	if !c.saslSizeOK(size) {
		return nil, false
	}
	b, err := readGrowing(c.br, int(size))
	if err != nil {
		c.readFailed(err, false)
		return nil, false
	}
	return b, true
}

// saslSizeOK checks a frame's size before authentication (closing the
// connection if it is out of bounds).
func (c *connection) saslSizeOK(size int32) bool {
	if max := c.sasl.b.MaxReceiveSize(); size < 0 || size > max {
		c.badFrame("sasl_size", "invalid SASL frame size before authentication, closing connection",
			"size", size, "sasl.server.max.receive.size", max)
		return false
	}
	return true
}

// readGrowing reads size bytes into a buffer that starts at 4 KiB and
// doubles as bytes arrive, so a peer announcing a frame and sending
// nothing costs no more than it sent.
func readGrowing(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, min(size, 4096))
	for len(b) < size {
		if len(b) == cap(b) {
			b = append(b, make([]byte, min(cap(b), size-len(b)))...)[:len(b)]
		}
		n, err := r.Read(b[len(b):min(cap(b), size)])
		b = b[:len(b)+n]
		if err != nil && len(b) < size {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return b, nil
}
