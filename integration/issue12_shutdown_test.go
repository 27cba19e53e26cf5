package integration

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kcatPath returns kcat's path or fails the test.
func kcatPath(t testing.TB) string {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found: install it (apt-get install -y kcat); ./test.sh does")
	}
	return kcat
}

// SIGTERM to `moldau serve` while kcat long-polls with a 5-minute
// fetch.wait.max.ms: the broker answers the waiting fetch, drains and
// exits 0 within seconds (issue 12, point 3: it took 30 s and exited 1,
// "1 connections still busy after 30s").
func TestSigtermDuringLongPoll(t *testing.T) {
	kcat := kcatPath(t)
	dir := t.TempDir()
	port, metricsPort := freePort(t), freePort(t)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", metricsPort)
	p := startProcess(t, dir, port, "moldau.metrics.listener="+metricsAddr)
	ctx := ctxTimeout(t, 2*time.Minute)
	if _, err := newAdmin(t, p.Addr).CreateTopic(ctx, 1, 1, nil, "longpoll"); err != nil {
		t.Fatal(err)
	}
	// One record, so that kcat's "-o end" has somewhere to start.
	if err := newClient(t, p.Addr, kgo.DefaultProduceTopic("longpoll")).ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	c := exec.Command(kcat, "-C", "-b", p.Addr, "-t", "longpoll", "-o", "end", "-X", "fetch.wait.max.ms=300000", "-q")
	out := &syncBuffer{}
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	kcatDone := make(chan struct{})
	go func() { c.Wait(); close(kcatDone) }()
	t.Cleanup(func() {
		c.Process.Kill()
		<-kcatDone
	})

	// Wait until kcat's fetch waits in the purgatory.
	eventually(t, 30*time.Second, func() error {
		if v, _ := metric(scrape(t, metricsAddr), `kafka_server_delayedoperationpurgatory_numdelayedoperations{delayedOperation="Fetch"}`); v < 1 {
			return fmt.Errorf("no fetch waiting in the purgatory yet (kcat: %q)", out.String())
		}
		return nil
	})

	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("broker still running 20s after SIGTERM with a consumer long-polling:\n%s", p.Out.String())
	}
	took := time.Since(start)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("broker exited %d after SIGTERM:\n%s", code, p.Out.String())
	}
	if took > 10*time.Second {
		t.Fatalf("broker took %v to stop after SIGTERM with a consumer long-polling", took)
	}
	t.Logf("broker exited 0, %v after SIGTERM", took.Round(time.Millisecond))
}
