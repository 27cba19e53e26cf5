package broker

import (
	"github.com/moldau/moldau/broker/routine"

	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsServer serves /metrics (Prometheus text format) and
// /debug/pprof/ over HTTP on its own mux. (Importing net/http/pprof also
// registers its handlers on http.DefaultServeMux, which Moldau never
// serves.)
type MetricsServer struct {
	ln  net.Listener
	srv *http.Server
	log *slog.Logger
	g   routine.Group // the serving goroutine

	closeOnce sync.Once
	closeErr  error
}

// ServeMetrics listens on addr (host:port, port 0 for an ephemeral one)
// and serves the metrics gathered from reg, and pprof.
func ServeMetrics(addr string, reg prometheus.Gatherer, logger *slog.Logger) (*MetricsServer, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	m := &MetricsServer{
		ln: ln,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		},
		log: logger,
	}
	m.g.Go(func(<-chan struct{}) {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics HTTP server stopped", "addr", ln.Addr().String(), "err", err)
		}
	})
	return m, nil
}

// Addr is the address the server listens on.
func (m *MetricsServer) Addr() net.Addr { return m.ln.Addr() }

// Close stops the server: it waits up to 5 s for requests in flight (a
// CPU profile may take longer: it is then cut), and for the serving
// goroutine. Idempotent.
func (m *MetricsServer) Close() error {
	m.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.srv.Shutdown(ctx); err != nil {
			m.closeErr = m.srv.Close()
		}
		m.g.StopAndWait()
	})
	return m.closeErr
}
