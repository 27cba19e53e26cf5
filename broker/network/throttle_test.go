package network

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/moldau/moldau/kapi"
)

// A response with Throttle is sent at once and the connection then reads
// nothing for the throttle time (KIP-219); with NoResponse it is muted
// without an answer. Other connections are not affected, and a shutdown
// ends the mute.
func TestThrottleMutesAfterResponse(t *testing.T) {
	const mute = 400 * time.Millisecond
	var mu sync.Mutex
	handled := map[int32]time.Time{}
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		mu.Lock()
		handled[r.CorrelationID] = time.Now()
		mu.Unlock()
		resp := echoResponse(r.CorrelationID, []byte("x"))
		switch r.ClientID {
		case "throttled":
			resp.Throttle = mute
		case "acks0":
			resp = &kapi.Response{NoResponse: true, Throttle: mute}
		}
		respond(resp)
	})
	s := startServer(t, h, nil)
	for _, client := range []string{"throttled", "acks0"} {
		c := dial(t, s.addr)
		other := dial(t, s.addr)
		start := time.Now()
		c.Write(append(echoRequest(1, client, nil), echoRequest(2, "x", nil)...))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if client == "throttled" {
			if f := readFrame(t, c); correlationID(f) != 1 {
				t.Fatalf("%s: first response %d", client, correlationID(f))
			}
			if d := time.Since(start); d >= mute {
				t.Fatalf("%s: the throttled response took %v: it must go at once", client, d)
			}
		}
		// Another connection is served during the mute.
		other.Write(echoRequest(7, "x", nil))
		other.SetReadDeadline(time.Now().Add(10 * time.Second))
		if f := readFrame(t, other); correlationID(f) != 7 {
			t.Fatalf("other connection: response %d", correlationID(f))
		}
		if d := time.Since(start); d >= mute {
			t.Fatalf("another connection waited %v for the mute", d)
		}
		if f := readFrame(t, c); correlationID(f) != 2 {
			t.Fatalf("%s: second response %d", client, correlationID(f))
		}
		mu.Lock()
		gap := handled[2].Sub(handled[1])
		mu.Unlock()
		if gap < mute {
			t.Fatalf("%s: the next request was read %v after the throttled one, want at least %v", client, gap, mute)
		}
		c.Close()
		other.Close()
	}

	// Close does not wait out a long mute.
	long := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		resp := echoResponse(r.CorrelationID, nil)
		resp.Throttle = time.Hour
		respond(resp)
	})
	s2 := startServer(t, long, nil)
	c := dial(t, s2.addr)
	c.Write(echoRequest(1, "x", nil))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	readFrame(t, c)
	start := time.Now()
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Close took %v with a connection muted", d)
	}
	expectClosed(t, c)
}
