package broker

import (
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/network"
)

func TestServeMetrics(t *testing.T) {
	base := runtime.NumGoroutine()
	reg := prometheus.NewRegistry()
	network.NewMetrics(reg)
	ms, err := ServeMetrics("127.0.0.1:0", reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{}}
	get := func(path string) (int, string) {
		resp, err := client.Get("http://" + ms.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/metrics")
	if code != 200 || !strings.Contains(body, "kafka_network_socketserver_networkprocessoravgidlepercent") || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	if code, body := get("/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("/debug/pprof/: %d", code)
	}
	if code, _ := get("/debug/pprof/goroutine?debug=1"); code != 200 {
		t.Fatalf("goroutine profile: %d", code)
	}
	client.CloseIdleConnections()
	if err := ms.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ms.Close(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, base)
}

// waitGoroutines waits until no more than base goroutines run.
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
