package network

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/moldau/moldau/kapi"
)

func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	s := startServer(t, testHandlerFunc(testHandler), nil)
	g := startGoodClient(t, s.addr)
	for range 3 {
		c := dial(t, s.addr)
		c.Write(echoRequest(1, "panic", nil))
		expectClosed(t, c)
		g.waitProgress(t, 10)
	}
	g.finish(t)
}

func TestRespondTwiceIsDropped(t *testing.T) {
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		respond(echoResponse(r.CorrelationID, []byte("first")))
		respond(echoResponse(r.CorrelationID, []byte("second")))
	})
	s := startServer(t, h, nil)
	c := dial(t, s.addr)
	for i := range int32(3) {
		c.Write(echoRequest(i, "x", nil))
		if f := readFrame(t, c); correlationID(f) != i || string(f[4:]) != "first" {
			t.Fatalf("got %d %q", correlationID(f), f[4:])
		}
	}
}

func idle(bits uint64) float64 { return math.Float64frombits(bits) }

func TestIdleGauges(t *testing.T) {
	reg := newRegistry()
	m := NewMetrics(reg)
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		if r.ClientID == "busy" {
			// A slow request (a sleep, so that the test does not
			// depend on free CPUs): the handler goroutine is inside
			// Handle, not waiting for a request.
			time.Sleep(2 * time.Millisecond)
		}
		testHandler(ctx, r, respond)
	})
	s := startServer(t, h, func(c *Config) {
		c.NumIOThreads = 2
		c.Metrics = m
	})
	time.Sleep(150 * time.Millisecond)
	if v := gaugeValue(t, reg, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent"); v < 0.9 || v > 1 {
		t.Fatalf("handler idle %v when idle", v)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		c := dial(t, s.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int32(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c.Write(echoRequest(i, "busy", make([]byte, 100)))
				if _, err := tryReadFrame(c); err != nil {
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		v := gaugeValue(t, reg, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent")
		n := gaugeValue(t, reg, "kafka_network_socketserver_networkprocessoravgidlepercent")
		if v < 0 || v > 1 || n < 0 || n > 1 {
			t.Fatalf("gauges out of 0..1: handler %v network %v", v, n)
		}
		if v < 0.3 {
			t.Logf("handler idle %.3f, network idle %.3f under load", v, n)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handler idle still %v under load", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	// Back to idle once the load stops.
	deadline = time.Now().Add(5 * time.Second)
	for idle(s.handlerIdle.Load()) < 0.9 {
		if time.Now().After(deadline) {
			t.Fatalf("handler idle %v after the load", idle(s.handlerIdle.Load()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBusyMeter(t *testing.T) {
	epoch := time.Now()
	b := newBusyMeter(epoch)
	s1 := b.begin()
	s2 := b.begin()
	time.Sleep(20 * time.Millisecond)
	now := int64(time.Since(epoch))
	if got := b.total(now); got < int64(2*(now-s1))-int64(time.Millisecond) {
		t.Fatalf("two intervals in progress: %v", time.Duration(got))
	}
	b.end(s1)
	b.end(s2)
	done := b.total(int64(time.Since(epoch)))
	time.Sleep(10 * time.Millisecond)
	if b.total(int64(time.Since(epoch))) != done {
		t.Fatal("busy grew while idle")
	}
	w := newIdleWindow(3, 1)
	meters := []*busyMeter{b}
	var lastBusy, lastWall int64
	for i := range 5 {
		w.add(int64(i+1)*int64(time.Second)+now, meters, func(_ int, busy, wall int64) { lastBusy, lastWall = busy, wall })
	}
	if lastBusy != 0 || lastWall != 2*int64(time.Second) {
		t.Fatalf("window: busy %d wall %d", lastBusy, lastWall)
	}
}
