package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
)

func serve(args []string) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	cfgPath := fs.StringP("config", "c", "", "server.properties file (Kafka property names); none: all defaults")
	overrides := fs.StringArrayP("override", "o", nil, "set a property, key=value (repeatable; wins over the file)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
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

	cfg, warnings, err := config.Load(*cfgPath, *overrides)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		logger.Warn(w)
	}
	b, err := broker.New(cfg, broker.Options{Logger: logger})
	if err != nil {
		return err
	}
	b.Start()
	logger.Info("joining the cluster", "node.id", cfg.NodeID, "process.roles", strings.Join(cfg.ProcessRoles, ","))
	if err := waitReady(b); err != nil {
		b.Close()
		return err
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
	for _, l := range cfg.Listeners {
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
	s := <-sig
	logger.Info("shutting down", "signal", s.String())
	signal.Stop(sig)
	if err := b.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("shut down cleanly")
	return nil
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
