// Package brokertest starts an in-process, one-node Moldau broker for
// tests outside package integration (the command line's, the console's):
// a combined broker and controller on 127.0.0.1 with a port of its own,
// its log in the test's temporary directory, closed when the test ends.
package brokertest

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
)

// Start starts a broker with props (Kafka properties, name=value): by
// default log.dirs in a temporary directory, and a PLAINTEXT listener and
// the metrics listener on free ports of 127.0.0.1 (the default metrics
// port, 9404, may be taken by any broker on the machine). It returns the
// broker, started.
func Start(t testing.TB, props ...string) *broker.Broker {
	t.Helper()
	for _, d := range []string{"log.dirs=" + t.TempDir(), "listeners=PLAINTEXT://127.0.0.1:0", "moldau.metrics.listener=127.0.0.1:0"} {
		name, _, _ := strings.Cut(d, "=")
		if !slices.ContainsFunc(props, func(p string) bool { return strings.HasPrefix(p, name+"=") }) {
			props = append(props, d)
		}
	}
	cfg, _, err := config.Load("", props)
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(cfg, broker.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b.Start()
	t.Cleanup(func() { b.Close() })
	return b
}
