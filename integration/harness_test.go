package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/cmd/moldau/dev"
)

// testBroker is an in-process broker on an ephemeral port.
type testBroker struct {
	*broker.Broker
	Dir  string
	Logs *syncBuffer
}

// Seed returns "host:port" of the PLAINTEXT listener.
func (b *testBroker) Seed() string { return b.Addr("").String() }

// startBroker starts a broker with its data in dir ("" means a new temp
// dir) and the given property overrides; it is closed when the test ends.
func startBroker(t testing.TB, dir string, overrides ...string) *testBroker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	props := append([]string{
		"log.dirs=" + dir,
		"listeners=PLAINTEXT://127.0.0.1:0",
		"moldau.metrics.listener=127.0.0.1:0",
	}, overrides...)
	cfg, warnings, err := config.Load("", props)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if len(warnings) > 0 {
		t.Fatalf("unexpected config warnings: %v", warnings)
	}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelInfo}))
	b, err := broker.New(cfg, broker.Options{Logger: logger})
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	b.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.WaitReady(ctx); err != nil {
		b.Close()
		t.Fatalf("broker did not become ready: %v", err)
	}
	tb := &testBroker{Broker: b, Dir: dir, Logs: logs}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("broker.Close: %v", err)
		}
	})
	return tb
}

// newClient returns a kgo client for seed (several: comma-separated),
// closed at the end of the test.
func newClient(t testing.TB, seed string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(seed, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t testing.TB, seed string) *kadm.Client {
	return kadm.NewClient(newClient(t, seed))
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it returns nil or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := poll(timeout, cond); err != nil {
		t.Fatalf("condition not met after %v: %v", timeout, err)
	}
}

// poll is eventually for a caller that explains a timeout itself: it
// returns cond's last error once the timeout passes.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testWriter sends broker logs to t.Log, so they show up only for failing
// tests (or with -v).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { recover() }() // t.Log after the test ended panics
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ---- brokers as processes, for crash tests ----

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// moldauBinary builds cmd/moldau once per test run.
func moldauBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "moldau-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "moldau")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/moldau").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// brokerProcess is `moldau serve` running as a child process.
type brokerProcess struct {
	cmd  *exec.Cmd
	Addr string
	Out  *syncBuffer
	done chan struct{}
}

// freePort finds a free loopback port (dev.FreePort: below the
// ephemeral range, never the same twice in the test binary).
func freePort(t testing.TB) int {
	t.Helper()
	port, err := dev.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// startProcess starts `moldau serve` with data in dir on port, and waits
// until it serves clients.
func startProcess(t testing.TB, dir string, port int, overrides ...string) *brokerProcess {
	t.Helper()
	args := []string{
		"--override", "log.dirs=" + dir,
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", port),
		"--override", "moldau.metrics.listener=",
	}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	p := launchProcess(t, fmt.Sprintf("127.0.0.1:%d", port), args...)
	p.waitStarted(t)
	return p
}

// launchProcess starts `moldau serve` with the given flags, serving
// clients on addr, without waiting for it.
func launchProcess(t testing.TB, addr string, flags ...string) *brokerProcess {
	t.Helper()
	return launchProcessEnv(t, addr, nil, flags...)
}

// launchProcessEnv is launchProcess with variables added to the
// environment ("GOMEMLIMIT=1GiB").
func launchProcessEnv(t testing.TB, addr string, env []string, flags ...string) *brokerProcess {
	t.Helper()
	p := &brokerProcess{cmd: exec.Command(moldauBinary(t), append([]string{"serve"}, flags...)...), Addr: addr, Out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.Out, p.Out
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if t.Failed() {
			// A Go process prints every goroutine's stack on SIGQUIT:
			// the first thing to read if the broker hung.
			p.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
			}
		}
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("broker process %s output:\n%s", p.Addr, p.Out.String())
		}
	})
	return p
}

// waitStarted waits until the process says it serves clients ("moldau
// started": it joined the cluster and was unfenced) and accepts a
// connection.
func (p *brokerProcess) waitStarted(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if strings.Contains(p.Out.String(), "moldau started") {
			c, err := net.DialTimeout("tcp", p.Addr, time.Second)
			if err == nil {
				c.Close()
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("broker exited during start-up:\n%s", p.Out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker did not start within 60s:\n%s", p.Out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *brokerProcess) kill(t testing.TB) {
	p.cmd.Process.Kill()
	<-p.done
}

// stop sends SIGTERM and waits for a clean exit.
func (p *brokerProcess) stop(t testing.TB) {
	t.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("broker did not stop within 60s of SIGINT:\n%s", p.Out.String())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("broker exited %d after SIGINT:\n%s", code, p.Out.String())
	}
}
