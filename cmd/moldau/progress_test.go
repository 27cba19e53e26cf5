package main

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestProgressOnlyWhenEnabled(t *testing.T) {
	var calls atomic.Int64
	status := func() string { return "produced " + strings.Repeat("x", int(calls.Add(1))%3) }

	var off lockedBuffer
	startProgress(&off, false, status).Stop()
	if off.String() != "" || calls.Load() != 0 {
		t.Errorf("disabled progress wrote %q, status called %d times", off.String(), calls.Load())
	}

	var on lockedBuffer
	p := startProgress(&on, true, status)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(on.String(), "produced") {
		if time.Now().After(deadline) {
			t.Fatal("no progress line within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Stop()
	p.Stop() // idempotent
	out := on.String()
	if !strings.HasPrefix(out, "\r\x1b[Kproduced") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("progress output %q: want redraws of one line, cleared at the end", out)
	}
	if n := calls.Load(); strings.Count(out, "produced") != int(n) {
		t.Errorf("%d redraws for %d status calls", strings.Count(out, "produced"), n)
	}
}
