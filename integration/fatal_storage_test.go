//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker"
	"github.com/moldau/moldau/broker/config"
	"github.com/moldau/moldau/log"
)

// Storage failures a broker does not survive, as Kafka halts on them:
// every log dir failed, the log dir of the metadata log failed, or an I/O
// error of the metadata log itself. The broker logs one ERROR line saying
// why and shuts down; `moldau serve` exits 1 (no panic, no stack); an
// in-process broker stops serving without taking its process with it.

// failPartitionDirs makes a topic's partition dirs in dir fail as on a
// failing disk (see TestFailingLogDir): each is replaced by a plain file,
// so every open of a path in it fails with ENOTDIR. It returns the
// partitions it found there.
func failPartitionDirs(t *testing.T, dir, topic string, partitions int32) []int32 {
	t.Helper()
	var in []int32
	for part := int32(0); part < partitions; part++ {
		pd := filepath.Join(dir, fmt.Sprintf("%s-%d", topic, part))
		if _, err := os.Stat(pd); err != nil {
			continue
		}
		if err := os.Rename(pd, pd+".hidden"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pd, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		in = append(in, part)
	}
	return in
}

// waitExit waits for the process to exit and returns its exit code.
func (p *brokerProcess) waitExit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("the broker did not exit within %v:\n%s", timeout, lastLines(p.Out.String(), 40))
		return 0
	}
}

// checkFatalExit checks that a broker process exited 1 after one ERROR
// line giving reason, without a panic.
func checkFatalExit(t *testing.T, p *brokerProcess, reason string) {
	t.Helper()
	if code := p.waitExit(t, 30*time.Second); code != 1 {
		t.Fatalf("exit code %d, want 1:\n%s", code, lastLines(p.Out.String(), 40))
	}
	out := p.Out.String()
	if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
		t.Fatalf("the broker panicked:\n%s", lastLines(out, 60))
	}
	fatal := regexp.MustCompile(`(?m)^.*level=ERROR msg="fatal error: shutting down the broker".*$`).FindAllString(out, -1)
	if len(fatal) != 1 || !strings.Contains(fatal[0], reason) {
		t.Fatalf("fatal lines %q, want one with %q:\n%s", fatal, reason, lastLines(out, 40))
	}
	t.Logf("the broker said: %s", fatal[0])
	if strings.Contains(out, "moldau: ") {
		t.Errorf("a second line after the fatal one:\n%s", lastLines(out, 10))
	}
}

// produceUntilStorageError produces to partition until it answers
// KAFKA_STORAGE_ERROR (the fsync of flush.messages=1 fails first) or the
// broker goes away.
func produceUntilStorageError(t *testing.T, p *brokerProcess, topic string, partition int32) {
	t.Helper()
	cl := rawClient(t, p.Addr)
	id := topicID(t, cl, topic)
	for i := 0; i < 3; i++ {
		select {
		case <-p.done:
			return
		default:
		}
		req := produceRequestN(t, topic, id, partition, 1, 100)
		resp, err := req.RequestWith(ctxTimeout(t, 15*time.Second), cl.Broker(1))
		if err != nil {
			return // the broker is shutting down
		}
		if kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode) == kerr.KafkaStorageError {
			return
		}
	}
	t.Fatalf("produce on the failing dir kept succeeding:\n%s", lastLines(p.Out.String(), 30))
}

// Every log dir fails: the broker exits 1 after Kafka's line ("all log
// dirs in ... have failed"). The metadata log is in a dir of its own here,
// so this is the last data dir failing, not the metadata one.
func TestAllLogDirsFailedStopsTheBroker(t *testing.T) {
	dataDir, metaDir := t.TempDir(), t.TempDir()
	p := startProcess(t, dataDir, freePort(t), "metadata.log.dir="+metaDir)
	adm := newAdmin(t, p.Addr)
	ctx := ctxTimeout(t, time.Minute)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"flush.messages": kadm.StringPtr("1")}, "doomed"); err != nil {
		t.Fatal(err)
	}
	cl := rawClient(t, p.Addr)
	id := topicID(t, cl, "doomed")
	for part := int32(0); part < 2; part++ {
		if err := produceRaw(t, cl, "doomed", id, part, 1, 100); err != nil {
			t.Fatal(err)
		}
	}
	in := failPartitionDirs(t, dataDir, "doomed", 2)
	produceUntilStorageError(t, p, "doomed", in[0])
	checkFatalExit(t, p, "all log dirs in "+dataDir+" have failed")
}

// The log dir that holds the metadata log (the first of log.dirs) fails
// while another is fine: the broker exits 1 (Kafka's "the metadata log dir
// ... has failed").
func TestMetadataLogDirFailedStopsTheBroker(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	p := startProcess(t, dirA+","+dirB, freePort(t))
	cl := rawClient(t, p.Addr)
	adm := kadm.NewClient(cl)
	ctx := ctxTimeout(t, time.Minute)
	if _, err := adm.CreateTopic(ctx, 4, 1, map[string]*string{"flush.messages": kadm.StringPtr("1")}, "doomed"); err != nil {
		t.Fatal(err)
	}
	id := topicID(t, cl, "doomed")
	for part := int32(0); part < 4; part++ {
		if err := produceRaw(t, cl, "doomed", id, part, 1, 100); err != nil {
			t.Fatal(err)
		}
	}
	in := failPartitionDirs(t, dirA, "doomed", 4)
	if len(in) == 0 {
		t.Fatal("no partition in the first log dir")
	}
	produceUntilStorageError(t, p, "doomed", in[0])
	checkFatalExit(t, p, "the metadata log dir "+dirA+" has failed")
}

// An fsync of the metadata log fails (a fault-injecting file system under
// the metadata log of an in-process broker): the quorum stops, the broker
// logs one fatal line naming the file and the error and shuts down (its
// listener closes, Fatal and WaitReady report it), nothing panics, and
// the test process, which owns it, lives on.
func TestMetadataLogIOErrorStopsTheBroker(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := config.Load("", []string{"log.dirs=" + dir, "listeners=PLAINTEXT://127.0.0.1:0", "moldau.metrics.listener="})
	if err != nil {
		t.Fatal(err)
	}
	ffs := log.NewFaultFS(nil)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), nil))
	b, err := broker.New(cfg, broker.Options{Logger: logger, MetadataLogFS: ffs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	b.Start()
	if err := b.WaitReady(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	addr := b.Addr("").String()
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctxTimeout(t, 15*time.Second), 1, 1, nil, "before"); err != nil {
		t.Fatal(err)
	}

	ffs.Inject(log.Fault{Op: log.OpSync, PathContains: ".log", Sticky: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err = kadm.NewClient(newClient(t, addr)).CreateTopic(ctx, 1, 1, nil, "after")
	cancel()
	if err == nil {
		t.Fatal("creating a topic with a failing metadata log succeeded")
	}
	select {
	case <-b.Fatal():
	case <-time.After(10 * time.Second):
		t.Fatalf("the broker did not stop:\n%s", logs.String())
	}
	ferr := b.FatalErr()
	var fe *broker.FatalError
	if !errors.As(ferr, &fe) || !errors.Is(ferr, log.ErrInjected) ||
		!strings.Contains(ferr.Error(), filepath.Join(dir, "__cluster_metadata-0", "00000000000000000000.log")) {
		t.Fatalf("fatal error %v: want the injected fault on the metadata log file", ferr)
	}
	if err := b.WaitReady(context.Background()); !errors.Is(err, log.ErrInjected) {
		t.Errorf("WaitReady after the fatal error: %v", err)
	}
	b.Close()
	eventually(t, 10*time.Second, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return errors.New("the listener still accepts connections")
		}
		return nil
	})
	out := logs.String()
	if n := strings.Count(out, `msg="fatal error: shutting down the broker"`); n != 1 {
		t.Errorf("%d fatal lines, want 1:\n%s", n, out)
	}
	if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
		t.Errorf("a panic:\n%s", out)
	}
	t.Logf("fatal error: %v", ferr)
}
