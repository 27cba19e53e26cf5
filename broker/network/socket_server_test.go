package network

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/kapi"
)

// testHandlerFunc adapts a function to RequestHandler.
type testHandlerFunc func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response))

func (f testHandlerFunc) Handle(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
	f(ctx, r, respond)
}

// echoResponse frames a response: size, correlation id, then body.
func echoResponse(corr int32, body []byte) *kapi.Response {
	buf := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint32(buf[4:], uint32(corr))
	buf = append(buf, body...)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return &kapi.Response{Buf: buf}
}

// apiVersionsResponse is a real ApiVersions response (response header v0).
func apiVersionsResponse(r *kapi.Request) *kapi.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(r.APIVersion)
	for _, k := range []int16{0, 1, 3, 18} {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: 0, MaxVersion: kmsg.RequestForKey(k).MaxVersion()})
	}
	buf := make([]byte, 8, 128)
	binary.BigEndian.PutUint32(buf[4:], uint32(r.CorrelationID))
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return &kapi.Response{Buf: buf}
}

// testHandler answers ApiVersions for real and echoes any other body. The
// client id selects special behaviours.
func testHandler(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
	switch r.ClientID {
	case "panic":
		panic("boom")
	case "acks0":
		respond(&kapi.Response{NoResponse: true})
		return
	case "close":
		respond(&kapi.Response{Close: true, CloseReason: "test asked"})
		return
	}
	if r.APIKey == 18 {
		respond(apiVersionsResponse(r))
		return
	}
	respond(echoResponse(r.CorrelationID, bytes.Clone(r.Body)))
}

// encodeRequest frames a request with header v1, or v2 when flexible.
func encodeRequest(key, version int16, corr int32, clientID *string, body []byte) []byte {
	b := make([]byte, 4, 64+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if clientID == nil {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
		b = append(b, *clientID...)
	}
	if flex, _ := headerFlexible(key, version); flex {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func apiVersionsRequest(corr int32, clientID string) []byte {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName = "moldau-test"
	req.ClientSoftwareVersion = "1.0"
	return encodeRequest(18, 3, corr, &clientID, req.AppendTo(nil))
}

// echoRequest is a Metadata v1 request (header v1) that testHandler echoes.
func echoRequest(corr int32, clientID string, body []byte) []byte {
	return encodeRequest(3, 1, corr, &clientID, body)
}

func readFrame(t testing.TB, c net.Conn) []byte {
	t.Helper()
	b, err := tryReadFrame(c)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	return b
}

func tryReadFrame(c net.Conn) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c, b)
	return b, err
}

func correlationID(frame []byte) int32 { return int32(binary.BigEndian.Uint32(frame)) }

type testServer struct {
	*SocketServer
	addr string
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startServer starts a server on 127.0.0.1:0; cleanup closes it and checks
// that no goroutine leaked.
func startServer(t *testing.T, h RequestHandler, mod func(*Config)) *testServer {
	t.Helper()
	base := runtime.NumGoroutine()
	cfg := Config{
		Listeners:         []ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1"}},
		NumNetworkThreads: 2,
		NumIOThreads:      4,
		Handler:           h,
		Logger:            testLogger(t),
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewSocketServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.sampleInterval = 20 * time.Millisecond
	s.Start()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		waitGoroutines(t, base)
	})
	return &testServer{SocketServer: s, addr: s.Addr("PLAINTEXT").String()}
}

func waitGoroutines(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d, want <= %d\n%s", n, base, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends an ApiVersions request and checks the response.
func roundTrip(c net.Conn, corr int32) error {
	if _, err := c.Write(apiVersionsRequest(corr, "good")); err != nil {
		return err
	}
	f, err := tryReadFrame(c)
	if err != nil {
		return err
	}
	if got := correlationID(f); got != corr {
		return errors.New("wrong correlation id")
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if err := resp.ReadFrom(f[4:]); err != nil {
		return err
	}
	if len(resp.ApiKeys) != 4 {
		return errors.New("wrong ApiVersions response")
	}
	return nil
}

// goodClient keeps doing round trips on its own connection until stopped.
type goodClient struct {
	c    net.Conn
	n    atomic.Int64
	err  atomic.Pointer[error]
	stop chan struct{}
	done chan struct{}
}

func startGoodClient(t *testing.T, addr string) *goodClient {
	g := &goodClient{stop: make(chan struct{}), done: make(chan struct{})}
	c := dial(t, addr)
	g.c = c
	go func() {
		defer close(g.done)
		for corr := int32(0); ; corr++ {
			select {
			case <-g.stop:
				return
			default:
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if err := roundTrip(c, corr); err != nil {
				g.err.Store(&err)
				return
			}
			g.n.Add(1)
		}
	}()
	return g
}

// waitProgress waits until the good client made k more round trips.
func (g *goodClient) waitProgress(t *testing.T, k int64) {
	t.Helper()
	start := g.n.Load()
	deadline := time.Now().Add(5 * time.Second)
	for g.n.Load() < start+k {
		if e := g.err.Load(); e != nil {
			t.Fatalf("good client failed: %v", *e)
		}
		if time.Now().After(deadline) {
			t.Fatal("good client made no progress")
		}
		time.Sleep(time.Millisecond)
	}
}

func (g *goodClient) finish(t *testing.T) {
	t.Helper()
	close(g.stop)
	<-g.done
	g.c.Close()
	if e := g.err.Load(); e != nil {
		t.Fatalf("good client failed: %v", *e)
	}
}

// expectClosed checks that the server closes c (read gets EOF or reset).
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("connection not closed by the server")
		}
		return
	}
}

func TestApiVersionsRoundTrip(t *testing.T) {
	s := startServer(t, testHandlerFunc(testHandler), nil)
	c := dial(t, s.addr)
	for i := range int32(10) {
		if err := roundTrip(c, i); err != nil {
			t.Fatal(err)
		}
	}
	// Null client id, header v1.
	c.Write(encodeRequest(3, 1, 77, nil, []byte("xyz")))
	if f := readFrame(t, c); correlationID(f) != 77 || string(f[4:]) != "xyz" {
		t.Fatalf("echo: %q", f)
	}
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	size := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	frame := func(b []byte) []byte { return append(size(uint32(len(b))), b...) }
	cases := []struct {
		name  string
		send  []byte
		close bool // client closes after sending (truncated input)
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false},
		{"truncated frame then close", append(size(100), "0123456789"...), true},
		{"truncated size then close", []byte{0, 0}, true},
		{"2GiB size", size(0x7fffffff), false},
		{"negative size", size(0xffffffff), false},
		{"zero size", size(0), false},
		{"unknown api key", encodeRequest(9999, 0, 1, nil, nil), false},
		{"truncated header", frame([]byte{0, 18, 0, 3, 0}), false},
		{"client id longer than frame", frame([]byte{0, 18, 0, 1, 0, 0, 0, 1, 0x10, 0}), false},
		{"client id length -2", frame([]byte{0, 18, 0, 1, 0, 0, 0, 1, 0xff, 0xfe}), false},
		{"bad tagged fields", frame([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 5, 1}), false},
		{"handler close", echoRequest(1, "close", nil), false},
	}
	s := startServer(t, testHandlerFunc(testHandler), nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := startGoodClient(t, s.addr)
			g.waitProgress(t, 5)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			bad := dial(t, s.addr)
			if _, err := bad.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tc.close {
				bad.Close()
			} else {
				expectClosed(t, bad)
			}
			g.waitProgress(t, 20)
			g.finish(t)
			waitConnections(t, s.SocketServer, 0)
			runtime.ReadMemStats(&after)
			// The good client's round trips allocate a little;
			// nothing may allocate the announced size.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Fatalf("allocated %d MiB", grew>>20)
			}
		})
	}
}

func waitConnections(t *testing.T, s *SocketServer, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := s.connectionCount()
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections: %d, want %d", n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A peer announcing a 2 GiB frame under a 2 GiB limit and sending a few
// bytes must not make the server allocate the announced size.
func TestHugeAnnouncedFrameDoesNotAllocate(t *testing.T) {
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) {
		c.SocketRequestMaxBytes = 1<<31 - 1
	})
	g := startGoodClient(t, s.addr)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var bads []net.Conn
	for range 10 {
		bad := dial(t, s.addr)
		bad.Write(binary.BigEndian.AppendUint32(nil, 1<<31-1))
		bad.Write(make([]byte, 1000))
		bads = append(bads, bad)
	}
	g.waitProgress(t, 20)
	time.Sleep(50 * time.Millisecond)
	runtime.ReadMemStats(&after)
	// 10 connections hold at most 1 MiB each while the bytes trickle in.
	if grew := int64(after.TotalAlloc) - int64(before.TotalAlloc); grew > 30<<20 {
		t.Fatalf("allocated %d MiB for 10 huge announced frames", grew>>20)
	}
	for _, c := range bads {
		c.Close()
	}
	g.finish(t)
	waitConnections(t, s.SocketServer, 0)
}

func TestPipelinedResponsesInOrder(t *testing.T) {
	var inFlight, maxInFlight atomic.Int32
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		n := inFlight.Add(1)
		for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
		}
		body := bytes.Clone(r.Body)
		wg.Add(1)
		go func() { // answer later, from another goroutine
			defer wg.Done()
			time.Sleep(time.Duration(r.CorrelationID%3) * time.Millisecond)
			inFlight.Add(-1)
			respond(echoResponse(r.CorrelationID, body))
		}()
	})
	s := startServer(t, h, nil)
	c := dial(t, s.addr)
	var all []byte
	for i := range int32(50) {
		all = append(all, echoRequest(i, "pipeline", []byte{byte(i)})...)
	}
	if _, err := c.Write(all); err != nil {
		t.Fatal(err)
	}
	for i := range int32(50) {
		f := readFrame(t, c)
		if correlationID(f) != i || f[4] != byte(i) {
			t.Fatalf("response %d: correlation id %d body %v", i, correlationID(f), f[4:])
		}
	}
	if m := maxInFlight.Load(); m != 1 {
		t.Fatalf("max requests in flight on one connection: %d, want 1 (muting)", m)
	}
}

func TestNoResponseUnmutes(t *testing.T) {
	s := startServer(t, testHandlerFunc(testHandler), nil)
	c := dial(t, s.addr)
	var all []byte
	all = append(all, echoRequest(1, "acks0", []byte("a"))...)
	all = append(all, echoRequest(2, "acks0", []byte("b"))...)
	all = append(all, echoRequest(3, "x", []byte("c"))...)
	c.Write(all)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if f := readFrame(t, c); correlationID(f) != 3 || string(f[4:]) != "c" {
		t.Fatalf("got correlation id %d %q, want 3 c", correlationID(f), f[4:])
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	block := make(chan struct{})
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		if r.ClientID == "slow" {
			select {
			case <-block:
			case <-ctx.Done():
			}
		}
		testHandler(ctx, r, respond)
	})
	s := startServer(t, h, func(c *Config) { c.ConnectionsMaxIdle = 150 * time.Millisecond })
	c := dial(t, s.addr)
	if err := roundTrip(c, 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	expectClosed(t, c)
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", d)
	}

	// Not while a request is in flight.
	c2 := dial(t, s.addr)
	c2.Write(echoRequest(5, "slow", []byte("z")))
	time.Sleep(400 * time.Millisecond)
	close(block)
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if f := readFrame(t, c2); correlationID(f) != 5 {
		t.Fatalf("correlation id %d", correlationID(f))
	}
}

// File regions go out by sendfile at their own offsets, and bytes in
// memory between them as they are.
func TestFileRegionUsesSendfile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "segment")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f.Write(data)
	var released atomic.Int32
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		// Buf: size, corr, "head", [region 0], "mid", [region 1], "tail"
		buf := []byte("sizecorrheadmidtail")
		regions := []kapi.FileRegion{
			{At: 12, File: f, Off: 1000, Len: 2 << 20},
			{At: 15, Bytes: []byte("memory"), Len: 6}, // bytes in memory, between two files' regions
			{At: 15, File: f, Off: 17, Len: 5},
		}
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4+(2<<20)+6+5))
		binary.BigEndian.PutUint32(buf[4:], uint32(r.CorrelationID))
		respond(&kapi.Response{Buf: buf, Regions: regions, Release: func() { released.Add(1) }})
	})
	s := startServer(t, h, nil)
	// The file's own position must not matter.
	f.Seek(123, io.SeekStart)
	c := dial(t, s.addr)
	for i := range int32(3) {
		c.Write(echoRequest(i, "fetch", nil))
		got := readFrame(t, c)
		want := []byte{0, 0, 0, byte(i)}
		want = append(want, "head"...)
		want = append(want, data[1000:1000+2<<20]...)
		want = append(want, "mid"...)
		want = append(want, "memory"...)
		want = append(want, data[17:22]...)
		want = append(want, "tail"...)
		if !bytes.Equal(got, want) {
			t.Fatalf("response %d differs (len %d, want %d)", i, len(got), len(want))
		}
	}
	if n := s.sendfileBytes.Load(); n != 3*(2<<20+5) {
		t.Fatalf("sendfile wrote %d bytes, want %d", n, 3*(2<<20+5))
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != 123 {
		t.Fatalf("file position moved to %d", pos)
	}
	if n := released.Load(); n != 3 {
		t.Fatalf("Release called %d times, want 3", n)
	}
}

func TestBackPressure(t *testing.T) {
	release := make(chan struct{})
	var handled atomic.Int32
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		handled.Add(1)
		respond(echoResponse(r.CorrelationID, nil))
	})
	s := startServer(t, h, func(c *Config) {
		c.QueuedMaxRequests = 1
		c.NumIOThreads = 1
	})
	const clients, perClient = 30, 20
	conns := make([]net.Conn, clients)
	for i := range conns {
		conns[i] = dial(t, s.addr)
		var all []byte
		for j := range perClient {
			all = append(all, echoRequest(int32(j), "bp", make([]byte, 1000))...)
		}
		// The server reads one request per connection at a time;
		// the rest waits in socket buffers.
		go conns[i].Write(all)
	}
	time.Sleep(200 * time.Millisecond)
	g1 := runtime.NumGoroutine()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	time.Sleep(300 * time.Millisecond)
	g2 := runtime.NumGoroutine()
	var m2 runtime.MemStats
	runtime.ReadMemStats(&m2)
	if q := s.channel.Len(); q > 1 {
		t.Fatalf("request queue holds %d, limit 1", q)
	}
	if g2 > g1+2 {
		t.Fatalf("goroutines grew from %d to %d while blocked", g1, g2)
	}
	if grew := int64(m2.HeapInuse) - int64(m1.HeapInuse); grew > 8<<20 {
		t.Fatalf("heap grew by %d MiB while blocked", grew>>20)
	}
	if n := handled.Load(); n != 0 {
		t.Fatalf("handled %d", n)
	}
	close(release)
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for j := range int32(perClient) {
			if f := readFrame(t, c); correlationID(f) != j {
				t.Fatalf("correlation id %d, want %d", correlationID(f), j)
			}
		}
	}
}

func TestCloseFinishesInFlightRequests(t *testing.T) {
	base := runtime.NumGoroutine()
	started := make(chan struct{}, 1)
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		started <- struct{}{}
		time.Sleep(300 * time.Millisecond)
		respond(echoResponse(r.CorrelationID, []byte("done")))
	})
	s, err := NewSocketServer(Config{
		Listeners: []ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1"}},
		Handler:   h,
		Logger:    testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	addr := s.Addr("PLAINTEXT").String()
	busy := dial(t, addr)
	idle := dial(t, addr)
	busy.Write(echoRequest(9, "x", nil))
	<-started
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// New connections are refused once closing (the listener closes
	// first; poll until it has).
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("new connection served during shutdown")
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("new connections still accepted 5s into shutdown")
		}
	}
	busy.SetReadDeadline(time.Now().Add(5 * time.Second))
	if f := readFrame(t, busy); string(f[4:]) != "done" {
		t.Fatalf("response %q", f)
	}
	expectClosed(t, idle)
	expectClosed(t, busy)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	busy.Close()
	idle.Close()
	waitGoroutines(t, base)
}

func TestCloseForcesAfterTimeout(t *testing.T) {
	base := runtime.NumGoroutine()
	var logs logBuffer
	var released atomic.Int32
	inFlight := make(chan struct{})
	h := testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
		close(inFlight)
		<-ctx.Done() // a handler stuck until the broker gives up
		respond(&kapi.Response{Buf: []byte{0, 0, 0, 0}, Release: func() { released.Add(1) }})
	})
	s, err := NewSocketServer(Config{
		Listeners:       []ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1"}},
		Handler:         h,
		Logger:          bufferLogger(&logs),
		ShutdownTimeout: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	c := dial(t, s.Addr("PLAINTEXT").String())
	c.Write(echoRequest(1, "stuck-client", nil))
	<-inFlight
	start := time.Now()
	if err := s.Close(); err == nil {
		t.Fatal("Close: no error for a forced shutdown")
	}
	// The warning names the request the shutdown gave up on.
	if l := logs.String(); !strings.Contains(l, "shutdown timeout") || !strings.Contains(l, "Metadata v1 from stuck-client (127.0.0.1:") {
		t.Errorf("the shutdown's warning does not name the request in flight:\n%s", l)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if released.Load() != 1 {
		t.Fatal("late response not released")
	}
	c.Close()
	waitGoroutines(t, base)
}

func TestCloseBeforeStart(t *testing.T) {
	base := runtime.NumGoroutine()
	s, err := NewSocketServer(Config{
		Listeners: []ListenerConfig{{Name: "A", Host: "127.0.0.1"}, {Name: "B", Host: "127.0.0.1"}},
		Handler:   testHandlerFunc(testHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr("A") == nil || s.Addr("B") == nil || s.Addr("C") != nil {
		t.Fatal("Addr")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Start() // no effect after Close
	waitGoroutines(t, base)
	if _, err := NewSocketServer(Config{Listeners: []ListenerConfig{{Name: "A"}, {Name: "A"}}, Handler: testHandlerFunc(testHandler)}); err == nil {
		t.Fatal("repeated listener name accepted")
	}
	if _, err := NewSocketServer(Config{Listeners: []ListenerConfig{{Name: "A"}}}); err == nil {
		t.Fatal("no handler accepted")
	}
}

func TestTwoListeners(t *testing.T) {
	s := startServer(t, testHandlerFunc(testHandler), func(c *Config) {
		c.Listeners = append(c.Listeners, ListenerConfig{Name: "INTERNAL", Host: "127.0.0.1"})
	})
	var seen sync.Map
	for _, l := range []string{"PLAINTEXT", "INTERNAL"} {
		c := dial(t, s.Addr(l).String())
		if err := roundTrip(c, 1); err != nil {
			t.Fatal(l, err)
		}
		seen.Store(l, true)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	s, err := NewSocketServer(Config{
		Listeners: []ListenerConfig{{Name: "PLAINTEXT", Host: "127.0.0.1"}},
		Handler: testHandlerFunc(func(ctx context.Context, r *kapi.Request, respond func(*kapi.Response)) {
			respond(&kapi.Response{Buf: []byte{0, 0, 0, 8, byte(r.CorrelationID >> 24), byte(r.CorrelationID >> 16), byte(r.CorrelationID >> 8), byte(r.CorrelationID), 1, 2, 3, 4}})
		}),
		Metrics: NewMetrics(newRegistry()),
	})
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	defer s.Close()
	c, err := net.Dial("tcp", s.Addr("PLAINTEXT").String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := apiVersionsRequest(1, "bench")
	resp := make([]byte, 12)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, resp); err != nil {
			b.Fatal(err)
		}
	}
}
