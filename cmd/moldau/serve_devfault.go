package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/moldau/moldau/cmd/moldau/dev"
	"github.com/moldau/moldau/log"
)

// `moldau dev` slows a node's disk through two environment variables it
// sets on its child nodes only (dev.FaultControlEnv, dev.DiskDelayEnv);
// they are not broker properties and are not meant for production. With
// dev.FaultControlEnv unset (every other broker), serve passes no file
// system to the broker, which then uses log.OSFS: no wrapper, no
// listener, no cost. The metadata log keeps the OS file system: a slow
// disk slows the partitions' appends, not the quorum.
const (
	devFaultControlEnv = dev.FaultControlEnv
	devDiskDelayEnv    = dev.DiskDelayEnv
)

// startDevFaultControl returns the log.dirs file system of a `moldau dev`
// node and a func that stops its control listener; nil and a no-op for
// any other broker.
func startDevFaultControl(logger *slog.Logger) (log.FS, func(), error) {
	addr := os.Getenv(devFaultControlEnv)
	if addr == "" {
		return nil, func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%s=%q: %w", devFaultControlEnv, addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, nil, fmt.Errorf("%s=%q: must be a loopback address", devFaultControlEnv, addr)
	}
	dfs := log.NewDelayFS(nil)
	if v := os.Getenv(devDiskDelayEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, nil, fmt.Errorf("%s=%q: %w", devDiskDelayEnv, v, err)
		}
		dfs.SetDelay(d)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", devFaultControlEnv, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /disk-delay", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, dfs.Delay())
	})
	mux.HandleFunc("PUT /disk-delay", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("delay"))
		if err != nil || d < 0 {
			http.Error(w, "delay: want a duration such as 200ms or 0s", http.StatusBadRequest)
			return
		}
		dfs.SetDelay(d)
		logger.Warn("dev: disk delay set", "delay", d)
		fmt.Fprintln(w, d)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	logger.Warn("dev: log.dirs run through a delaying file system (moldau dev)", "control", ln.Addr().String(), "delay", dfs.Delay())
	return dfs, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			srv.Close()
		}
	}, nil
}
