package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Issue 11: one client could take every connection. Kafka's connection
// quotas are enforced and changed at run time with kadm's
// AlterBrokerConfigs: the per-IP limit and its overrides close the
// connection over the limit, a listener's max.connections makes the next
// connection wait until one closes, lowering the broker's max.connections
// closes the least recently used connections of unprotected listeners,
// the creation rate throttles, and Kafka's validation refuses
// max.connections.per.ip=0 without overrides.
//
// The broker has two listeners: PLAINTEXT (the inter-broker listener,
// protected as in Kafka, used by the admin client) and LIMITED (used by
// the raw connections under test).
func TestConnectionQuotasAtRunTime(t *testing.T) {
	q := startQuotaBroker(t)
	// Kafka's validation.
	if err := q.alter("max.connections.per.ip", "0"); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("max.connections.per.ip=0 without overrides: %v, want INVALID_REQUEST", err)
	}
	if err := q.alter("listener.name.limited.max.connections", "0"); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("a listener limit of 0: %v, want INVALID_REQUEST", err)
	}
	q.perIP(t)
	q.brokerLimit(t, q.listenerLimit(t))
	q.creationRate(t)
}

// quotaBroker is the broker of TestConnectionQuotasAtRunTime, its admin
// client and its LIMITED listener's address.
type quotaBroker struct {
	b       *hardBroker
	adm     *kadm.Client
	ctx     context.Context
	limited string
}

func startQuotaBroker(t *testing.T) *quotaBroker {
	ports := freePorts(t, 3)
	port, limitedPort := ports[0], ports[1]
	b := startHardBrokerAt(t, port, ports[2], nil,
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,LIMITED://127.0.0.1:%d", port, limitedPort),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,LIMITED:PLAINTEXT")
	return &quotaBroker{b: b, adm: newAdmin(t, b.Addr), ctx: ctxTimeout(t, 2*time.Minute),
		limited: fmt.Sprintf("127.0.0.1:%d", limitedPort)}
}

// alter sets a cluster-wide dynamic broker config with kadm.
func (q *quotaBroker) alter(name, value string) error {
	resps, err := q.adm.AlterBrokerConfigs(q.ctx, []kadm.AlterConfig{{Name: name, Value: &value}})
	if err == nil {
		err = resps[0].Err
	}
	return err
}

// perIP: with the override 127.0.0.2:2, a third connection from there is
// closed at once; other addresses are not limited.
func (q *quotaBroker) perIP(t *testing.T) {
	if err := q.alter("max.connections.per.ip.overrides", "127.0.0.2:2"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		var cs []net.Conn
		defer func() {
			for _, c := range cs {
				c.Close()
			}
		}()
		for range 2 {
			c, err := dialFrom("127.0.0.2", q.limited)
			if err != nil || !served(c, 5*time.Second) {
				return fmt.Errorf("a connection under the per-IP limit was not served: %v", err)
			}
			cs = append(cs, c)
		}
		c, err := dialFrom("127.0.0.2", q.limited)
		if err != nil {
			return err
		}
		cs = append(cs, c)
		if !closedWithin(c, 2*time.Second) {
			return errors.New("the third connection from 127.0.0.2 was not closed")
		}
		return nil
	})
	eventually(t, 5*time.Second, func() error {
		if v := q.b.metric(t, "kafka_server_socketservermetrics_connection_close_reason_total", `reason="per_ip_limit"`); v < 1 {
			return fmt.Errorf("per_ip_limit closes counted: %v", v)
		}
		return nil
	})
	// Other addresses are not limited by the override.
	var others []net.Conn
	for range 4 {
		c, err := dialFrom("127.0.0.3", q.limited)
		if err != nil || !served(c, 5*time.Second) {
			t.Fatalf("127.0.0.3 was limited: %v", err)
		}
		others = append(others, c)
	}
	for _, c := range others {
		c.Close()
	}
}

// listenerLimit: LIMITED may hold 2; the third waits for a slot. It
// returns the two connections left open.
func (q *quotaBroker) listenerLimit(t *testing.T) []net.Conn {
	if err := q.alter("listener.name.limited.max.connections", "2"); err != nil {
		t.Fatal(err)
	}
	a1, a2, waiting := mustDial(t, q.limited), mustDial(t, q.limited), (net.Conn)(nil)
	eventually(t, 10*time.Second, func() error {
		if !served(a1, 5*time.Second) || !served(a2, 5*time.Second) {
			t.Fatal("connections under the listener limit were not served")
		}
		c := mustDial(t, q.limited)
		if served(c, 500*time.Millisecond) {
			c.Close()
			return errors.New("a third connection on LIMITED was served")
		}
		waiting = c
		return nil
	})
	a1.Close()
	if !served(waiting, 5*time.Second) {
		t.Fatal("the waiting connection was not served once a slot was free")
	}
	return []net.Conn{a2, waiting}
}

// brokerLimit: the broker's max.connections below what is open closes
// LIMITED's connections (PLAINTEXT, the inter-broker listener, is
// protected and keeps the admin's), and a new one waits until it is
// raised.
func (q *quotaBroker) brokerLimit(t *testing.T, open []net.Conn) {
	if err := q.alter("max.connections", "1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range open {
		if !closedWithin(c, 10*time.Second) {
			t.Fatal("a connection above max.connections was not closed")
		}
	}
	// Counted just after the socket is closed.
	eventually(t, 5*time.Second, func() error {
		if v := q.b.metric(t, "kafka_server_socketservermetrics_connection_close_reason_total", `reason="max_connections"`); v != 2 {
			return fmt.Errorf("max_connections closes counted: %v, want 2", v)
		}
		return nil
	})
	blocked := mustDial(t, q.limited)
	if served(blocked, 500*time.Millisecond) {
		t.Fatal("a connection was served above max.connections")
	}
	// The admin client still works (protected listener).
	rc, err := q.adm.DescribeBrokerConfigs(q.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc[0].Configs {
		if c.Key == "max.connections" && (c.Value == nil || *c.Value != "1" || c.Source.String() != "DYNAMIC_DEFAULT_BROKER_CONFIG") {
			t.Fatalf("DescribeConfigs: max.connections %v from %v", c.Value, c.Source)
		}
	}
	if err := q.alter("max.connections", "1000"); err != nil {
		t.Fatal(err)
	}
	if !served(blocked, 10*time.Second) {
		t.Fatal("the blocked connection was not served once max.connections was raised")
	}
	if v := q.b.metric(t, "kafka_network_acceptor_blocked_seconds_total", `listener="LIMITED"`); v <= 0 {
		t.Fatalf("acceptor blocked time %v", v)
	}
	blocked.Close()
}

// creationRate: 5 connections a second on LIMITED, the rest delayed.
func (q *quotaBroker) creationRate(t *testing.T) {
	if err := q.alter("listener.name.limited.max.connections", "1000"); err != nil {
		t.Fatal(err)
	}
	if err := q.alter("listener.name.limited.max.connection.creation.rate", "5"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		before := q.b.metric(t, "kafka_server_socketservermetrics_connection_accept_throttled_total", `listener="LIMITED"`)
		for range 12 {
			c := mustDial(t, q.limited)
			if !served(c, 10*time.Second) {
				t.Fatal("a throttled connection was not served")
			}
			c.Close()
		}
		if after := q.b.metric(t, "kafka_server_socketservermetrics_connection_accept_throttled_total", `listener="LIMITED"`); after-before < 5 {
			return fmt.Errorf("%v of 12 connections throttled at 5 a second", after-before)
		}
		return nil
	})
}

// dialFrom connects to addr from the local address ip (any 127.0.0.0/8
// address works on Linux's loopback).
func dialFrom(ip, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", addr)
}

func mustDial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// served reports whether an ApiVersions round trip on c completes within d.
func served(c net.Conn, d time.Duration) bool {
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(frame(18, 0, 5, nil)); err != nil {
		return false
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return false
	}
	_, err := io.ReadFull(c, make([]byte, binary.BigEndian.Uint32(size[:])))
	return err == nil
}

// closedWithin reports whether the broker closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	var buf [64]byte
	for {
		_, err := c.Read(buf[:])
		if err == nil {
			continue
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}
