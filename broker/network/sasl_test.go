package network

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/broker/security"
	"github.com/moldau/moldau/kapi"
)

// startSASLServer serves a SASL_PLAINTEXT listener with PLAIN (user
// alice) and a 50 ms failed-authentication delay; handlers report the
// principal of each request.
func startSASLServer(t *testing.T, maxReauth time.Duration) (*testServer, string, *prometheus.Registry, chan string) {
	t.Helper()
	jaas, err := security.ParseJaasProperty(security.PlainLoginModule + ` required user_alice="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := security.NewSaslChannelBuilder(security.SaslConfig{
		Listener: "SASL", Mechanisms: []string{"PLAIN"}, Jaas: map[string]security.JaasEntry{"PLAIN": jaas},
		MaxReauth: map[string]time.Duration{"PLAIN": maxReauth}, MaxReceiveSize: 524288, FailedDelay: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	principals := make(chan string, 64)
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		select {
		case principals <- r.Principal:
		default:
		}
		testHandler(ctx, r, respond)
	})
	s := startServer(t, h, func(c *Config) {
		c.Listeners = []ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1"}, {Name: "SASL", Host: "127.0.0.1", ChannelBuilder: b}}
		c.Metrics = NewMetrics(reg)
	})
	return s, s.Addr("SASL").String(), reg, principals
}

func saslFrame(req kmsg.Request, corr int32) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("sasl-test")).AppendRequest(nil, req, corr)
}

func handshake(t *testing.T, c net.Conn, version int16, mech string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = version, mech
	if _, err := c.Write(saslFrame(req, 1)); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = version
	if err := resp.ReadFrom(readFrame(t, c)[4:]); err != nil {
		t.Fatal(err)
	}
	return resp
}

func authenticate(t *testing.T, c net.Conn, version int16, token string) (*kmsg.SASLAuthenticateResponse, error) {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = version, []byte(token)
	if _, err := c.Write(saslFrame(req, 2)); err != nil {
		return nil, err
	}
	f, err := tryReadFrame(c)
	if err != nil {
		return nil, err
	}
	body := f[4:]
	if version >= 2 {
		body = body[1:] // the response header's tags
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = version
	return resp, resp.ReadFrom(body)
}

// closed reports whether the server closed c (within a second).
func closed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || err != nil && strings.Contains(err.Error(), "reset")
}

func TestSASLListenerLogin(t *testing.T) {
	_, addr, reg, principals := startSASLServer(t, 0)

	// ApiVersions before the login, then SaslHandshake v1 and
	// SaslAuthenticate v2; the connection's requests then carry the
	// principal.
	c := dial(t, addr)
	if err := roundTrip(c, 7); err != nil {
		t.Fatal(err)
	}
	<-principals
	if hs := handshake(t, c, 1, "PLAIN"); hs.ErrorCode != 0 || len(hs.SupportedMechanisms) != 1 {
		t.Fatalf("handshake: %+v", hs)
	}
	resp, err := authenticate(t, c, 2, "\x00alice\x00alice-secret")
	if err != nil || resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
		t.Fatalf("authenticate: %+v %v", resp, err)
	}
	if err := roundTrip(c, 8); err != nil {
		t.Fatal(err)
	}
	if p := <-principals; p != "User:alice" {
		t.Fatalf("principal %q", p)
	}

	// SaslHandshake v0: the token and its (empty) answer are raw frames.
	c0 := dial(t, addr)
	handshake(t, c0, 0, "PLAIN")
	tok := "\x00alice\x00alice-secret"
	raw := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
	if _, err := c0.Write(append(raw, tok...)); err != nil {
		t.Fatal(err)
	}
	if f := readFrame(t, c0); len(f) != 0 {
		t.Fatalf("raw answer %q", f)
	}
	if err := roundTrip(c0, 9); err != nil {
		t.Fatal(err)
	}

	// An unknown mechanism: UNSUPPORTED_SASL_MECHANISM, then closed.
	cu := dial(t, addr)
	if hs := handshake(t, cu, 1, "GSSAPI"); hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
		t.Fatalf("unknown mechanism: %+v", hs)
	}
	if !closed(cu) {
		t.Fatal("not closed after an unsupported mechanism")
	}

	// A wrong password: answered after the delay with
	// SASL_AUTHENTICATION_FAILED and its message, then closed.
	cw := dial(t, addr)
	handshake(t, cw, 1, "PLAIN")
	start := time.Now()
	resp, err = authenticate(t, cw, 1, "\x00alice\x00wrong")
	if err != nil || resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "Invalid username or password") {
		t.Fatalf("wrong password: %+v %v", resp, err)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("failure answered after %v, before the delay", took)
	}
	if !closed(cw) {
		t.Fatal("not closed after a failed login")
	}
	waitUntil(t, "two failures counted", func() bool {
		return counterValue(t, reg, "kafka_server_socketservermetrics_authentication_total", map[string]string{"listener": "SASL", "result": "failure"}) >= 2
	})
	if n := counterValue(t, reg, "kafka_server_socketservermetrics_authentication_total", map[string]string{"listener": "SASL", "result": "success"}); n != 2 {
		t.Errorf("successes %v, want 2", n)
	}
}

// Before the login only ApiVersions, SaslHandshake and SaslAuthenticate
// are read, at most sasl.server.max.receive.size bytes each.
func TestSASLPreAuthLimits(t *testing.T) {
	_, addr, _, principals := startSASLServer(t, 0)
	for name, frame := range map[string][]byte{
		"metadata":      saslFrame(kmsg.NewPtrMetadataRequest(), 1),
		"oversized":     {0x00, 0x08, 0x00, 0x01, 0, 17, 0, 1},
		"negative":      {0xff, 0xff, 0xff, 0xff},
		"authenticate0": saslFrame(kmsg.NewPtrSASLAuthenticateRequest(), 1),
		"garbage":       {0, 0, 0, 3, 1, 2, 3},
	} {
		c := dial(t, addr)
		if _, err := c.Write(frame); err != nil {
			t.Fatal(err)
		}
		if !closed(c) {
			t.Errorf("%s: connection not closed", name)
		}
	}
	select {
	case p := <-principals:
		t.Fatalf("a request reached the handler before authentication: %q", p)
	default:
	}
	// After SaslHandshake v1, ApiVersions is refused too.
	c := dial(t, addr)
	handshake(t, c, 1, "PLAIN")
	if _, err := c.Write(apiVersionsRequest(3, "x")); err != nil {
		t.Fatal(err)
	}
	if !closed(c) {
		t.Error("ApiVersions between handshake and authenticate not refused")
	}
}

// KIP-368: the session lifetime is sent, a re-authentication in the
// middle of the connection works, and an expired session is closed at
// its next request.
func TestSASLReauthentication(t *testing.T) {
	_, addr, _, principals := startSASLServer(t, 300*time.Millisecond)
	c := dial(t, addr)
	handshake(t, c, 1, "PLAIN")
	resp, err := authenticate(t, c, 1, "\x00alice\x00alice-secret")
	if err != nil || resp.SessionLifetimeMillis != 300 {
		t.Fatalf("lifetime: %+v %v", resp, err)
	}
	handshake(t, c, 1, "PLAIN")
	if resp, err := authenticate(t, c, 1, "\x00alice\x00alice-secret"); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("re-authentication: %+v %v", resp, err)
	}
	if err := roundTrip(c, 5); err != nil {
		t.Fatal(err)
	}
	<-principals
	// Let the session expire (the lifetime is the condition here).
	time.Sleep(400 * time.Millisecond)
	if err := roundTrip(c, 6); err == nil {
		t.Fatal("a request after the session expired was served")
	}
}

func FuzzSASLPreAuthFrames(f *testing.F) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	f.Add(saslFrame(hs, 1)[4:])
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 2, []byte("\x00a\x00b")
	f.Add(saslFrame(au, 1)[4:])
	f.Add([]byte{0, 17, 0, 0, 0, 0, 0, 1, 0xff, 0xff})
	b, err := security.NewSaslChannelBuilder(security.SaslConfig{Listener: "SASL", Mechanisms: []string{"PLAIN"},
		Jaas: map[string]security.JaasEntry{"PLAIN": {LoginModule: security.PlainLoginModule, Options: map[string]string{"user_a": "b"}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := parseRequestHeader(frame)
		if err != nil {
			return
		}
		r := &kapi.Request{APIKey: h.APIKey, APIVersion: h.APIVersion, Body: body}
		s := b.NewSaslServer()
		switch h.APIKey {
		case kapi.SaslHandshakeKey:
			_, _ = kapi.SaslHandshake(r, s)
		case kapi.SaslAuthenticateKey:
			_ = s.Handshake("PLAIN")
			_, _ = kapi.SaslAuthenticate(r, s)
		}
	})
}
