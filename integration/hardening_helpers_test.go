package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers of the issue 11 tests (hardening_*_test.go): a broker process
// with a metrics listener and an environment, its memory and metrics, raw
// request framing, and a well-behaved producer measuring its latency.

// hardBroker is `moldau serve` as a process, with /metrics.
type hardBroker struct {
	*brokerProcess
	Dir     string
	Metrics string // http://host:port/metrics
}

// startHardBroker starts a broker process with env added to its
// environment and the given overrides, and waits until it serves.
func startHardBroker(t testing.TB, env []string, overrides ...string) *hardBroker {
	t.Helper()
	ports := freePorts(t, 2)
	return startHardBrokerAt(t, ports[0], ports[1], env, overrides...)
}

// freePorts finds n distinct free loopback ports.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ports = append(ports, freePort(t))
	}
	return ports
}

// startHardBrokerAt is startHardBroker with the PLAINTEXT listener on port
// and /metrics on mport.
func startHardBrokerAt(t testing.TB, port, mport int, env []string, overrides ...string) *hardBroker {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc and dials from 127.0.0.0/8 addresses: Linux only")
	}
	dir := t.TempDir()
	args := []string{
		"--override", "log.dirs=" + dir,
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d", port),
		"--override", fmt.Sprintf("moldau.metrics.listener=127.0.0.1:%d", mport),
	}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	p := launchProcessEnv(t, fmt.Sprintf("127.0.0.1:%d", port), env, args...)
	p.waitStarted(t)
	return &hardBroker{brokerProcess: p, Dir: dir, Metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)}
}

// procStatus reads a field of /proc/<pid>/status in bytes (VmRSS, VmHWM).
func (b *hardBroker) procStatus(field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			fs := strings.Fields(rest)
			if len(fs) == 2 && fs[1] == "kB" {
				n, _ := strconv.ParseInt(fs[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// alive reports whether the process is still running.
func (b *hardBroker) alive() bool {
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// metric sums the samples of a metric whose labels contain every
// name="value" in want, from the broker's /metrics.
func (b *hardBroker) metric(t testing.TB, name string, want ...string) float64 {
	t.Helper()
	resp, err := http.Get(b.Metrics)
	if err != nil {
		t.Fatalf("scraping %s: %v", b.Metrics, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// requestHeader frames the header of a request whose body has bodyLen
// bytes: the size prefix, key, version, correlation id, client id, and
// the tagged-field byte of a flexible version.
func requestHeader(key, version int16, corr int32, clientID string, bodyLen int) []byte {
	b := make([]byte, 4, 32+len(clientID))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req := kmsg.RequestForKey(key); req != nil && version >= 0 && version <= req.MaxVersion() {
		req.SetVersion(version)
		if req.IsFlexible() {
			b = append(b, 0)
		}
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4+bodyLen))
	return b
}

// latencyProducer produces small records with acks=all throughout a test
// and records each acknowledgement's latency and time.
type latencyProducer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	latencies []time.Duration
	ackTimes  []time.Time
	errs      int
	lastErr   error
}

func startLatencyProducer(t testing.TB, seed, topic string, interval time.Duration) *latencyProducer {
	t.Helper()
	cl := newClient(t, seed, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(60*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	p := &latencyProducer{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			start := time.Now()
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: []byte("small")}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				now := time.Now()
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					if ctx.Err() == nil {
						p.errs++
						p.lastErr = err
					}
					return
				}
				p.latencies = append(p.latencies, now.Sub(start))
				p.ackTimes = append(p.ackTimes, now)
			})
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *latencyProducer) stop() {
	p.cancel()
	<-p.done
}

func (p *latencyProducer) acks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ackTimes)
}

// stats returns the acknowledgements' count, p50, p99 and max latency, the
// longest time without an acknowledgement between from and to, and the
// errors.
func (p *latencyProducer) stats(from, to time.Time) (n int, p50, p99, worst, maxGap time.Duration, errs int, lastErr error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lat := slices.Clone(p.latencies)
	slices.Sort(lat)
	if len(lat) > 0 {
		p50, p99, worst = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	prev := from
	for _, at := range p.ackTimes {
		if at.Before(from) || at.After(to) {
			continue
		}
		maxGap = max(maxGap, at.Sub(prev))
		prev = at
	}
	maxGap = max(maxGap, to.Sub(prev))
	return len(lat), p50, p99, worst, maxGap, p.errs, p.lastErr
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// benchProducer is `moldau bench produce` as a separate process: a
// well-behaved producer whose latency is not skewed by the goroutines of
// the test process (a fuzzer, the race detector).
type benchProducer struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	errb bytes.Buffer
	done chan error
}

// benchSummary holds the fields of bench's --json summary used here.
type benchSummary struct {
	Records     int64 `json:"records"`
	Errors      int64 `json:"errors"`
	ErrorCounts []struct {
		Error string `json:"error"`
		Count int64  `json:"count"`
	} `json:"error_counts"`
	Latency struct {
		Count uint64  `json:"count"`
		P50   float64 `json:"p50"`
		P99   float64 `json:"p99"`
		P999  float64 `json:"p999"`
		Max   float64 `json:"max"`
	} `json:"latency_ms"`
}

// startBenchProducer produces small records to topic (which must exist)
// at rate records/s with acks=all, until stop.
func startBenchProducer(t testing.TB, seed, topic string, rate int) *benchProducer {
	t.Helper()
	p := &benchProducer{done: make(chan error, 1)}
	p.cmd = exec.Command(moldauBinary(t), "bench", "produce", "--brokers", seed, "--topic", topic,
		"--create-topic=false", "--delete-topic=false", "--acks", "all", "--record-size", "100",
		"--linger", "0s", "--rate", strconv.Itoa(rate), "--duration", "1h", "--json")
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// stop interrupts the producer and returns its summary.
func (p *benchProducer) stop(t testing.TB) benchSummary {
	t.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("bench produce did not stop:\n%s", p.errb.String())
	}
	p.done <- nil // for the cleanup
	var s benchSummary
	if err := json.Unmarshal(p.out.Bytes(), &s); err != nil {
		t.Fatalf("bench produce summary: %v\n%s\n%s", err, p.out.String(), p.errb.String())
	}
	return s
}
