package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/broker/memory"
	"github.com/moldau/moldau/log"
)

func serve(args []string) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	cfgPath := fs.StringP("config", "c", "", "server.properties file (Kafka property names); none: all defaults")
	overrides := fs.StringArrayP("override", "o", nil, "set a property, key=value (repeatable; wins over the file)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	addScram := fs.StringArray("add-scram", nil, "a SCRAM credential a brand-new cluster starts with, as kafka-storage format --add-scram: 'SCRAM-SHA-256=[name=admin,password=secret]' (repeatable; written when the cluster bootstraps, ignored afterwards)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "Usage: moldau serve [--config FILE] [--override key=value ...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected argument %q (use --config FILE)", fs.Arg(0))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("invalid --log-level %q: expected debug, info, warn or error", *logLevel)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	// Before the configuration, whose default queued.max.request.bytes
	// derives from the memory limit.
	setMemoryLimit(logger)
	defer startGCFloor(logger).Stop()
	cfg, warnings, err := config.Load(*cfgPath, *overrides)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		logger.Warn(w)
	}
	if cfg.QueuedMaxRequestBytes > 0 && cfg.MemoryBudget > 0 {
		logger.Info("request memory pool derived from the memory budget",
			"queued.max.request.bytes", cfg.QueuedMaxRequestBytes, "budget", cfg.MemoryBudget, "budget_from", cfg.MemoryBudgetSource)
	}
	logFS, stopFaults, err := startDevFaultControl(logger)
	if err != nil {
		return err
	}
	defer stopFaults()
	b, err := broker.New(cfg, broker.Options{Logger: logger, AddScram: *addScram, LogFS: logFS})
	if err != nil {
		return startupError(cfg, err)
	}
	b.Start()
	logger.Info("joining the cluster", "node.id", cfg.NodeID, "process.roles", strings.Join(cfg.ProcessRoles, ","))
	if err := waitReady(b); err != nil {
		b.Close()
		if b.FatalErr() != nil {
			return errFatal
		}
		return startupError(cfg, err)
	}

	source := "built-in defaults"
	if cfg.Source != "" {
		source = cfg.Source
	}
	if len(*overrides) > 0 {
		source += " with overrides " + strings.Join(*overrides, ", ")
	}
	dirs := make([]string, len(cfg.LogDirs))
	for i, d := range cfg.LogDirs {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		dirs[i] = d
	}
	listening := make([]string, 0, len(cfg.Listeners))
	for _, l := range append(cfg.Listeners, cfg.ControllerListeners...) {
		listening = append(listening, l.Name+"://"+b.Addr(l.Name).String())
	}
	logger.Info("moldau started",
		"version", version,
		"node.id", cfg.NodeID,
		"cluster.id", b.ClusterID(),
		"listeners", strings.Join(listening, ","),
		"log.dirs", strings.Join(dirs, ","),
		"config", source)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	case <-b.Fatal():
		// The broker logged why and is shutting itself down (Kafka
		// halts the process): exit 1 once it has.
		b.Close()
		return errFatal
	}
	signal.Stop(sig)
	if err := b.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("shut down cleanly")
	return nil
}

// errFatal is serve's error after a fatal error stopped the broker, which
// has logged the reason: main exits 1 without another line.
var errFatal = errors.New("the broker stopped on a fatal error")

// memoryLimitShare is the share of the cgroup memory limit given to
// GOMEMLIMIT: the rest is for what the Go runtime does not count (thread
// stacks outside the heap, cgo, the kernel's socket buffers charged to the
// cgroup).
const memoryLimitShare = 0.9

// setMemoryLimit sets the Go memory limit (GOMEMLIMIT) to 90% of the
// cgroup memory limit when the user has not set GOMEMLIMIT, so that the
// garbage collector works harder before the cgroup's OOM killer does.
func setMemoryLimit(logger *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		logger.Info("memory limit from GOMEMLIMIT", "bytes", debug.SetMemoryLimit(-1))
		return
	}
	limit, err := memory.CgroupLimit()
	if err != nil {
		logger.Warn("reading the cgroup memory limit failed; GOMEMLIMIT not set", "err", err)
		return
	}
	if limit <= 0 {
		return
	}
	set := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(set)
	logger.Info("GOMEMLIMIT set from the cgroup memory limit", "cgroup_limit", limit, "gomemlimit", set)
}

// gcFloor is the smallest heap goal of the garbage collector
// (memory.GCFloor), at most a sixteenth of the memory limit (Kafka runs
// with a heap of 1 GiB by default).
const gcFloor = 128 << 20

// startGCFloor keeps the collector from running every few MB while the
// live heap is small, unless the user set GOGC.
func startGCFloor(logger *slog.Logger) *memory.GCFloor {
	if os.Getenv("GOGC") != "" {
		return nil
	}
	floor := min(int64(gcFloor), debug.SetMemoryLimit(-1)/16)
	g := memory.StartGCFloor(floor)
	if g != nil {
		logger.Debug("garbage collector heap goal floor", "bytes", floor)
	}
	return g
}

// waitReady waits until the broker serves clients: its metadata quorum has
// a leader and the controller has unfenced it. A signal meanwhile stops it.
func waitReady(b *broker.Broker) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	return b.WaitReady(ctx)
}

// startupError says what stopped start-up in one line. Running out of
// file descriptors anywhere (the logs, the metadata log, a listener) is
// told with what the logs need and the current ulimit -n.
func startupError(cfg *config.KafkaConfig, err error) error {
	var fl *log.FileLimitError
	if log.IsTooManyOpenFiles(err) && !errors.As(err, &fl) {
		return log.NewFileLimitError(nil, cfg.LogDirs, err)
	}
	return err
}
