package network

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
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

// A client reconnecting many times does not fill the log at INFO: each
// connection is logged at DEBUG, and one summary line per interval counts
// them by reason. A refused request is logged at INFO once per reason and
// interval, the rest are counted (issue 12, point 6).
func TestConnectionLogSummary(t *testing.T) {
	logs := &lockedBuffer{}
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		c.ConnectionSummaryInterval = time.Hour // only the summary at Close
	})
	for i := 0; i < 30; i++ {
		c := dial(t, s.addr)
		if err := roundTrip(c, int32(i)); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	for i := 0; i < 5; i++ {
		c := dial(t, s.addr)
		if _, err := c.Write(echoRequest(1, "close", nil)); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c)
	}
	waitConnections(t, s.SocketServer, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if strings.Contains(out, "connection opened") || strings.Contains(out, "connection closed") {
		t.Fatalf("connections logged one by one at INFO:\n%s", out)
	}
	if n := strings.Count(out, "closing connection as the request handler asked"); n != 1 {
		t.Fatalf("%d INFO lines for the same refusal, want 1:\n%s", n, out)
	}
	var summary string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "msg=connections") {
			summary = line
		}
	}
	for _, want := range []string{"opened=35", "closed=35", `closed_by_reason="peer=30 refused=5"`, `refused="5x test asked"`} {
		if !strings.Contains(summary, want) {
			t.Fatalf("summary %q lacks %s; log:\n%s", summary, want, out)
		}
	}
}
