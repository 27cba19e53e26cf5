package network

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// num.io.threads changed at run time: the handler pool grows and shrinks,
// and requests are served throughout.
func TestResizeHandlers(t *testing.T) {
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) { c.NumIOThreads = 2 })
	c := dial(t, s.addr)
	// A round trip first: the connection's goroutine exists only once the
	// server accepted it, which dial does not wait for.
	if err := roundTrip(c, 0); err != nil {
		t.Fatal(err)
	}
	// Count the handler goroutines themselves: the total count moves
	// with whatever else the process runs.
	waitHandlers(t, 2)
	s.ResizeHandlers(6)
	if n := s.NumIOThreads(); n != 6 {
		t.Fatalf("%d handlers, want 6", n)
	}
	if err := roundTrip(c, 1); err != nil {
		t.Fatal(err)
	}
	waitHandlers(t, 6)
	s.ResizeHandlers(1)
	if n := s.NumIOThreads(); n != 1 {
		t.Fatalf("%d handlers, want 1", n)
	}
	waitHandlers(t, 1) // the 5 stopped handlers exit
	for i := int32(2); i < 10; i++ {
		if err := roundTrip(c, i); err != nil {
			t.Fatal(err)
		}
	}
}

// num.network.threads changed at run time: new connections spread over
// the new processors; connections of a removed processor close after
// their request in flight and clients reconnect to the others.
func TestResizeProcessors(t *testing.T) {
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) { c.NumNetworkThreads = 1 })
	old := dial(t, s.addr)
	if err := roundTrip(old, 1); err != nil {
		t.Fatal(err)
	}
	s.ResizeProcessors(3)
	if n := s.NumNetworkThreads(); n != 3 {
		t.Fatalf("%d processors, want 3", n)
	}
	var conns []interface{ Close() error }
	for i := 0; i < 6; i++ {
		c := dial(t, s.addr)
		if err := roundTrip(c, int32(i)); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	used := 0
	for _, p := range s.activeProcessors() {
		if p.connectionCount() > 0 {
			used++
		}
	}
	if used != 3 {
		t.Fatalf("connections on %d of 3 processors", used)
	}
	// Shrink to 1: the connections of the two removed processors close
	// (they are idle), the first processor's stay.
	s.ResizeProcessors(1)
	waitConnections(t, s.SocketServer, 3) // old + the 2 of 6 on processor 0
	if err := roundTrip(old, 99); err != nil {
		t.Fatalf("connection of the remaining processor: %v", err)
	}
	c := dial(t, s.addr)
	if err := roundTrip(c, 100); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s.allProcessors()) > 1 && time.Now().Before(deadline) {
		s.ResizeProcessors(1) // prunes retired processors without connections
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(s.allProcessors()); n != 1 {
		t.Fatalf("%d processors kept after the retired ones lost their connections", n)
	}
	for _, c := range conns {
		c.Close()
	}
}

// waitHandlers waits until exactly n handler goroutines run.
func waitHandlers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		got := strings.Count(string(buf), "(*kafkaRequestHandlerPool).run(")
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d handler goroutines, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
