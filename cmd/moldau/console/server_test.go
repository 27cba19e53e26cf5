package console

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// testPoller is a poller with no cluster: the test publishes snapshots.
func testPoller() *Poller {
	return &Poller{changed: make(chan struct{}), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func testServer(t *testing.T, p *Poller, cfg Config) (*httptest.Server, *handler) {
	return serveSource(t, p, cfg, func(h *handler) {
		if cfg.Mount != nil {
			cfg.Mount(h.mux, p)
		}
	})
}

// serveSource serves the console's handler on src until the test ends;
// mount, if set, adds to the handler before it serves.
func serveSource(t *testing.T, src source, cfg Config, mount func(*handler)) (*httptest.Server, *handler) {
	cfg.defaults()
	h := newHandler(src, cfg)
	if mount != nil {
		mount(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.cancel(); srv.Close() })
	return srv, h
}

// sseReader reads server-sent events: comment lines are heartbeats.
type sseReader struct {
	r    *bufio.Reader
	body io.Closer
}

func openEvents(t *testing.T, url string) *sseReader {
	t.Helper()
	resp, err := http.Get(url + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	return &sseReader{r: bufio.NewReader(resp.Body), body: resp.Body}
}

// next returns the next event's data, or "heartbeat".
func (s *sseReader) next(t *testing.T) string {
	t.Helper()
	var data string
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading events: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && data != "":
			return data
		case strings.HasPrefix(line, ": "):
			return "heartbeat"
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// nextSnapshot skips heartbeats.
func (s *sseReader) nextSnapshot(t *testing.T) string {
	t.Helper()
	for {
		if got := s.next(t); got != "heartbeat" {
			return got
		}
	}
}

func seqOf(t *testing.T, data string) int64 {
	t.Helper()
	var s Snapshot
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		t.Fatalf("event data %q: %v", data, err)
	}
	return s.Seq
}

func TestEventsStream(t *testing.T) {
	p := testPoller()
	srv, _ := testServer(t, p, Config{Heartbeat: 50 * time.Millisecond})

	// Before the first poll: no snapshot, the stream waits with heartbeats.
	if resp, err := http.Get(srv.URL + "/api/snapshot"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("snapshot before the first poll: %v %v", resp.Status, err)
	}
	ev := openEvents(t, srv.URL)
	defer ev.body.Close()
	if got := ev.next(t); got != "heartbeat" {
		t.Fatalf("first line before any snapshot: %q", got)
	}
	p.publish(baseSnapshot())
	if got := ev.nextSnapshot(t); seqOf(t, got) != 1 {
		t.Fatalf("first snapshot: %s", got)
	}
	s2 := baseSnapshot()
	s2.ControllerID = 2
	p.publish(s2)
	if got := ev.nextSnapshot(t); seqOf(t, got) != 2 {
		t.Fatalf("second snapshot: %s", got)
	}
	// A new connection gets the current snapshot at once.
	ev2 := openEvents(t, srv.URL)
	defer ev2.body.Close()
	if got := ev2.next(t); seqOf(t, got) != 2 {
		t.Fatalf("on connect: %s", got)
	}
	resp, err := http.Get(srv.URL + "/api/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if seqOf(t, string(body)) != 2 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("snapshot: %s %s", resp.Header.Get("Content-Type"), body)
	}
}

func TestEventsBoundedAndFreedOnDisconnect(t *testing.T) {
	p := testPoller()
	p.publish(baseSnapshot())
	srv, h := testServer(t, p, Config{MaxClients: 2})
	a, b := openEvents(t, srv.URL), openEvents(t, srv.URL)
	a.next(t)
	b.next(t)
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third stream: %s, want 503", resp.Status)
	}
	a.body.Close() // the client goes away: its slot is freed
	deadline := time.Now().Add(5 * time.Second)
	for len(h.slots) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("slots in use after a disconnect: %d", len(h.slots))
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := openEvents(t, srv.URL)
	defer c.body.Close()
	c.next(t)
	b.body.Close()
}

func TestStaticAndIndex(t *testing.T) {
	srv, _ := testServer(t, testPoller(), Config{})
	for path, ctype := range map[string]string{
		"/":                 "text/html",
		"/static/app.js":    "text/javascript",
		"/static/style.css": "text/css",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) {
			t.Errorf("%s: %s %q", path, resp.Status, resp.Header.Get("Content-Type"))
		}
	}
	resp, err := http.Get(srv.URL + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/nothing: %s", resp.Status)
	}
}

// Serve with no cluster behind it still serves the page, and stops on
// cancellation with its event streams open.
func TestServeWithoutCluster(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close() // nothing listens there now
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Config{Brokers: []string{dead}, Listen: "127.0.0.1:0", Timeout: 300 * time.Millisecond,
			Interval: 100 * time.Millisecond, Ready: func(a net.Addr) { addr <- a }})
	}()
	url := "http://" + (<-addr).String()
	deadline := time.Now().Add(10 * time.Second)
	var s Snapshot
	for {
		resp, err := http.Get(url + "/api/snapshot")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, &s); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot: %s", resp.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s.Errors["metadata"] == "" {
		t.Fatalf("a dead cluster's snapshot has no metadata error: %+v", s.Errors)
	}
	ev := openEvents(t, url)
	defer ev.body.Close()
	ev.next(t)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancellation")
	}
}

// Mount adds handlers next to the console's and gets its poller; Scripts
// are loaded by the page after its own.
func TestMountAndScripts(t *testing.T) {
	p := testPoller()
	var mounted *Poller
	srv, _ := testServer(t, p, Config{
		Scripts: []string{"/extra/panel.js"},
		Mount: func(mux *http.ServeMux, got *Poller) {
			mounted = got
			mux.HandleFunc("GET /extra/hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
		},
	})
	if mounted != p {
		t.Fatal("Mount was not given the poller")
	}
	for path, want := range map[string]string{
		"/":            `<script type="module" src="/extra/panel.js"></script>` + "\n</body>",
		"/extra/hello": "hello",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("%s: %s, want %q in %s", path, resp.Status, want, body)
		}
	}
}

// A snapshot of a cluster that never answered (every part failed) still
// has its lists, empty: the page iterates them, and a null stopped it
// before it showed why.
func TestSnapshotListsNeverNull(t *testing.T) {
	p := testPoller()
	if err := p.publish(&Snapshot{ControllerID: -1, Errors: map[string]string{"metadata": "unable to dial"}}); err != nil {
		t.Fatal(err)
	}
	s, _ := p.Current()
	for _, field := range []string{`"brokers":[]`, `"topics":[]`, `"groups":[]`, `"transactions":[]`} {
		if !strings.Contains(string(s.data), field) {
			t.Errorf("snapshot without %s: %s", field, s.data)
		}
	}
}
