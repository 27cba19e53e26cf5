package network

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/security"
	"github.com/moldau/moldau/broker/security/securitytest"
	"github.com/moldau/moldau/kapi"
)

// startTLSServer serves an SSL listener (ssl.client.auth=requested) and a
// PLAINTEXT one; handlers see the connection's principal in the request.
func startTLSServer(t *testing.T, receiveTimeout time.Duration) (*testServer, string, *securitytest.CA, *logBuffer, *prometheus.Registry, chan string) {
	t.Helper()
	ca := securitytest.NewCA(t, "test-ca")
	srv := ca.Issue(t, pkix.Name{CommonName: "broker"})
	f, err := security.NewSslFactory("SSL", security.SslConfigFrom(map[string]any{
		"ssl.keystore.type": "PEM", "ssl.keystore.location": srv.KeystorePEM(t, "srv"),
		"ssl.truststore.type": "PEM", "ssl.truststore.location": ca.CAFile(t),
		"ssl.client.auth": "requested", "ssl.enabled.protocols": []string{"TLSv1.2", "TLSv1.3"},
	}), true)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	reg := prometheus.NewRegistry()
	principals := make(chan string, 64)
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		select {
		case principals <- r.Listener + " " + r.Principal:
		default:
		}
		testHandler(ctx, r, respond)
	})
	s := startServer(t, h, func(c *Config) {
		c.Listeners = []ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1"}, {Name: "SSL", Host: "127.0.0.1", ChannelBuilder: f}}
		c.Logger = bufferLogger(logs)
		c.Metrics = NewMetrics(reg)
		c.RequestReceiveTimeout = receiveTimeout
	})
	return s, s.Addr("SSL").String(), ca, logs, reg, principals
}

func TestSSLListener(t *testing.T) {
	s, sslAddr, ca, logs, reg, principals := startTLSServer(t, 300*time.Millisecond)
	alice := ca.Issue(t, pkix.Name{CommonName: "alice", Organization: []string{"Org"}})

	// A client keeps working over TLS while others misbehave.
	good, err := tls.Dial("tcp", sslAddr, ca.ClientTLS(alice))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if err := roundTrip(good, 1); err != nil {
		t.Fatal(err)
	}
	if p := <-principals; p != "SSL User:CN=alice,O=Org" {
		t.Errorf("principal %q", p)
	}
	anon, err := tls.Dial("tcp", sslAddr, ca.ClientTLS(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if err := roundTrip(anon, 1); err != nil {
		t.Fatal(err)
	}
	if p := <-principals; p != "SSL User:ANONYMOUS" {
		t.Errorf("principal without a certificate %q", p)
	}
	plain := dial(t, s.addr)
	if err := roundTrip(plain, 1); err != nil {
		t.Fatal(err)
	}
	if p := <-principals; p != "PLAINTEXT User:ANONYMOUS" {
		t.Errorf("PLAINTEXT principal %q", p)
	}

	// A plaintext client on the TLS port, garbage, and a handshake that
	// never finishes: each closed, the good clients unaffected.
	c := dial(t, sslAddr)
	c.Write(apiVersionsRequest(1, "plain-on-tls"))
	expectClosed(t, c)
	c = dial(t, sslAddr)
	c.Write([]byte("\x16\x03\x01\x00\x05garbage garbage garbage"))
	expectClosed(t, c)
	start := time.Now()
	c = dial(t, sslAddr) // sends nothing
	expectClosed(t, c)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("silent handshake closed after %v, before the receive timeout", d)
	}
	// A TLS client on the PLAINTEXT port.
	if tc, err := tls.Dial("tcp", s.addr, ca.ClientTLS(nil)); err == nil {
		tc.Close()
		t.Error("TLS handshake succeeded on the PLAINTEXT listener")
	}
	for i := int32(2); i < 5; i++ {
		if err := roundTrip(good, i); err != nil {
			t.Fatalf("good TLS client: %v", err)
		}
		if err := roundTrip(plain, i); err != nil {
			t.Fatalf("good PLAINTEXT client: %v", err)
		}
	}
	waitUntil(t, "the failures counted", func() bool {
		return counterValue(t, reg, "kafka_server_socketservermetrics_authentication_total", map[string]string{"listener": "SSL", "result": "failure"}) == 3
	})
	if n := counterValue(t, reg, "kafka_server_socketservermetrics_authentication_total", map[string]string{"listener": "SSL", "result": "success"}); n != 2 {
		t.Errorf("successes %v", n)
	}
	// One line per peer and minute: the three failures from 127.0.0.1
	// are one line.
	if n := logs.count("failed authentication"); n != 1 {
		t.Errorf("%d failed-authentication lines:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "a PLAINTEXT client on an SSL listener?") {
		t.Errorf("no hint in the log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "an SSL client on a PLAINTEXT listener?") {
		t.Errorf("no hint for TLS on PLAINTEXT in the log:\n%s", logs)
	}
}

// Shutdown interrupts a handshake in progress.
func TestSSLHandshakeInterruptedByClose(t *testing.T) {
	s, sslAddr, _, _, _, _ := startTLSServer(t, 0) // bounded only by the idle timeout
	c, err := net.Dial("tcp", sslAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitConnections(t, s.SocketServer, 1)
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a handshake")
	}
}
