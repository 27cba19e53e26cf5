package dev

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"
)

// frame builds a request frame: api key 3, version 0, correlation id,
// client id.
func frame(corr int32, clientID string) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, 3)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// echoServer answers every frame with a frame holding its correlation
// id, and records the correlation ids it received.
type echoServer struct {
	ln   net.Listener
	mu   sync.Mutex
	seen []int32
}

func newEchoServer(t *testing.T) *echoServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					f, err := readFrame(c)
					if err != nil {
						return
					}
					corr := int32(binary.BigEndian.Uint32(f[8:]))
					s.mu.Lock()
					s.seen = append(s.seen, corr)
					s.mu.Unlock()
					resp := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 4), uint32(corr))
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func roundTrip(c net.Conn, corr int32, clientID string) (int32, error) {
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(frame(corr, clientID)); err != nil {
		return 0, err
	}
	f, err := readFrame(c)
	if err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(f[4:])), nil
}

func TestProxyLinksCutsAndLosses(t *testing.T) {
	srv := newEchoServer(t)
	events := &EventLog{}
	n := newNetwork(func(l Link, response bool, key int16) { events.Add("fault", l.String(), nil) })
	peers, err := newProxy(n, 1, false, func() string { return srv.ln.Addr().String() })
	if err != nil {
		t.Fatal(err)
	}
	defer peers.Close()

	dial := func() net.Conn {
		c, err := net.Dial("tcp", peers.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// Node 2's fetcher to node 1: named by its client id.
	c2 := dial()
	if got, err := roundTrip(c2, 1, "broker-2-replica-fetcher"); err != nil || got != 1 {
		t.Fatalf("through the proxy: %d, %v", got, err)
	}
	// Losing the next request on 2 -> 1: the server never sees 2, and
	// the client's next answer is for 3.
	n.LoseNext(Link{From: 2, To: 1}, false)
	c2.Write(frame(2, "broker-2-replica-fetcher"))
	if got, err := roundTrip(c2, 3, "broker-2-replica-fetcher"); err != nil || got != 3 {
		t.Fatalf("after a lost request: %d, %v", got, err)
	}
	// Losing the next response: the client reads the one after.
	n.LoseNext(Link{From: 2, To: 1}, true)
	c2.Write(frame(4, "broker-2-replica-fetcher"))
	if got, err := roundTrip(c2, 5, "broker-2-replica-fetcher"); err != nil || got != 5 {
		t.Fatalf("after a lost response: %d, %v", got, err)
	}
	srv.mu.Lock()
	seen := append([]int32(nil), srv.seen...)
	srv.mu.Unlock()
	if len(seen) != 4 || seen[1] != 3 {
		t.Fatalf("the server saw %v, want [1 3 4 5]", seen)
	}
	if evs, _ := events.Since(0); len(evs) != 2 {
		t.Fatalf("%d loss events, want 2", len(evs))
	}

	// Cutting node 3 leaves 2 -> 1 alone; cutting node 2 closes it, and
	// a new connection from node 2 is closed after its first request.
	c3 := dial()
	if _, err := roundTrip(c3, 1, "moldau-raft-3"); err != nil {
		t.Fatal(err)
	}
	n.Cut(3, false)
	if _, err := roundTrip(c2, 6, "broker-2-replica-fetcher"); err != nil {
		t.Fatalf("2 -> 1 with node 3 cut: %v", err)
	}
	if _, err := roundTrip(c3, 2, "moldau-raft-3"); err == nil {
		t.Fatal("3 -> 1 answered with node 3 cut off")
	}
	n.Cut(2, false)
	if _, err := roundTrip(c2, 7, "broker-2-replica-fetcher"); err == nil {
		t.Fatal("2 -> 1 answered with node 2 cut off")
	}
	if _, err := roundTrip(dial(), 8, "moldau-broker-2-to-controller"); err == nil {
		t.Fatal("a new connection from node 2 answered with node 2 cut off")
	}
	// A client on the peer listener is not a node: only a cut of node 1
	// stops it.
	if _, err := roundTrip(dial(), 9, "kgo"); err != nil {
		t.Fatalf("an unnamed client with nodes 2 and 3 cut: %v", err)
	}
	n.Heal(2)
	if _, err := roundTrip(dial(), 10, "broker-2-replica-fetcher"); err != nil {
		t.Fatalf("node 2 healed: %v", err)
	}

	// A connection that never sent a request does not hold Close up.
	dial()
	closed := make(chan struct{})
	go func() { peers.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for an idle connection")
	}
}
