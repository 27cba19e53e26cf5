package integration

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 11: 400 connections sending a frame at one byte a second were
// never closed. With moldau.socket.request.receive.timeout.ms=3000 each is
// closed within 3 s of its first byte (plus scheduling slack), a
// well-behaved producer is acknowledged throughout, and the broker logs
// one line about them (per peer and minute), not one per connection.
func TestSlowlorisClosedInTime(t *testing.T) {
	const timeout = 3 * time.Second
	conns := 400
	if hardeningFull() {
		conns = 2000
	}
	b := startHardBroker(t, nil, "moldau.socket.request.receive.timeout.ms=3000")
	good := startLatencyProducer(t, b.Addr, "slow-good", 20*time.Millisecond)
	eventually(t, 30*time.Second, func() error {
		if good.acks() < 5 {
			return errString("the producer is not acknowledged")
		}
		return nil
	})
	logBefore := len(b.Out.String())

	// A valid ApiVersions request, sent one byte a second.
	frame := requestHeader(18, 0, 1, "slowloris", 0)
	start := time.Now()
	lived := make([]time.Duration, conns)
	var wg sync.WaitGroup
	for i := range conns {
		c, err := net.DialTimeout("tcp", b.Addr, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := time.Now()
			closed := make(chan struct{})
			go func() {
				// The broker sends nothing: a read returns once it closes.
				c.SetReadDeadline(first.Add(4 * timeout))
				var buf [1]byte
				c.Read(buf[:])
				close(closed)
			}()
			for j := 0; j < len(frame)-1; j++ {
				if _, err := c.Write(frame[j : j+1]); err != nil {
					break
				}
				select {
				case <-closed:
				case <-time.After(time.Second):
					continue
				}
				break
			}
			<-closed
			lived[i] = time.Since(first)
		}()
	}
	wg.Wait()
	end := time.Now()
	var longest time.Duration
	for _, d := range lived {
		longest = max(longest, d)
	}
	n, p50, p99, worst, gap, errs, lastErr := good.stats(start, end)
	logAfter := b.Out.String()[logBefore:]
	lines := strings.Count(logAfter, "\n")
	// Each close is counted just after its socket is closed.
	var timeouts float64
	eventually(t, 5*time.Second, func() error {
		timeouts = b.metric(t, "kafka_server_socketservermetrics_connection_close_reason_total", `reason="receive_timeout"`)
		if int(timeouts) != conns {
			return fmt.Errorf("%v receive timeouts counted, want %d", timeouts, conns)
		}
		return nil
	})
	t.Logf("%d slow senders: the last closed %v after its first byte (timeout %v); %v counted as receive_timeout; broker log grew by %d bytes, %d lines; producer: %d acks, p50 %v, p99 %v, max %v, longest without an ack %v, %d errors",
		conns, longest.Round(time.Millisecond), timeout, timeouts, len(logAfter), lines, n, p50, p99, worst, gap, errs)
	if longest > timeout+1500*time.Millisecond {
		t.Fatalf("a slow sender lived %v, timeout %v", longest, timeout)
	}
	if got := strings.Count(logAfter, "request not received in time"); got != 1 {
		t.Fatalf("%d log lines about slow senders from one address, want 1:\n%s", got, logAfter)
	}
	if len(logAfter) > 16<<10 {
		t.Fatalf("the broker logged %d bytes for %d slow senders:\n%s", len(logAfter), conns, logAfter)
	}
	if errs > 0 || gap > 5*time.Second {
		t.Fatalf("the producer: %d errors (%v), %v without an acknowledgement", errs, lastErr, gap)
	}
}
