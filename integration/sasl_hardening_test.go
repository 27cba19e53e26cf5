package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// startSASLHardBroker is `moldau serve` with a SASL_PLAINTEXT listener
// (PLAIN, user alice) beside PLAINTEXT; it returns the SASL address.
func startSASLHardBroker(t *testing.T) (*hardBroker, string) {
	ports := freePorts(t, 3)
	sasl := fmt.Sprintf("127.0.0.1:%d", ports[2])
	// GOGC=100 turns serve's 128 MiB heap-goal floor off, so that RSS
	// follows the live heap (the floor lets garbage reach 128 MiB).
	b := startHardBrokerAt(t, ports[0], ports[1], []string{"GOGC=100"},
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,SASL://%s", ports[0], sasl),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		`listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`)
	return b, sasl
}

// failedLogin dials addr, logs in with a wrong PLAIN password and waits for
// the answer; it returns how long the answer took.
func failedLogin(addr string) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("flood"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 1, []byte("\x00alice\x00wrong")
	if _, err := c.Write(f.AppendRequest(nil, hs, 1)); err != nil {
		return 0, err
	}
	if _, err := readSizedFrame(c); err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := c.Write(f.AppendRequest(nil, au, 2)); err != nil {
		return 0, err
	}
	if _, err := readSizedFrame(c); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func readSizedFrame(c net.Conn) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c, b)
	return b, err
}

// A thousand failed logins a second from one peer: each is answered after
// connection.failed.authentication.delay.ms (100 ms) without holding a
// thread, and a producer on the same broker keeps its latency. Then bad
// input before authentication (random SaslHandshake and SaslAuthenticate
// bodies, other API keys, oversized and announced-but-unsent frames)
// closes the connections and leaves RSS within a few MB.
func TestSASLFailedLoginFloodAndBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test")
	}
	b, sasl := startSASLHardBroker(t)
	measure := func(d time.Duration) (int, time.Duration, time.Duration, int) {
		p := startLatencyProducer(t, b.Addr, "sasl-flood", 10*time.Millisecond)
		time.Sleep(d) // the measurement window
		p.stop()
		n, p50, p99, _, _, errs, _ := p.stats(time.Time{}, time.Time{})
		return n, p50, p99, errs
	}
	n0, p50b, p99b, _ := measure(3 * time.Second)

	// The flood: 1000 logins a second for 5 s, from 127.0.0.1.
	var done, failed atomic.Int64
	var minAnswer atomic.Int64
	minAnswer.Store(int64(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	var wg sync.WaitGroup
	floodStart := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			<-tick.C
			wg.Add(1)
			go func() {
				defer wg.Done()
				took, err := failedLogin(sasl)
				if err != nil {
					failed.Add(1)
					return
				}
				done.Add(1)
				for cur := minAnswer.Load(); int64(took) < cur && !minAnswer.CompareAndSwap(cur, int64(took)); cur = minAnswer.Load() {
				}
			}()
		}
	}()
	n1, p50f, p99f, errs := measure(4 * time.Second)
	cancel()
	wg.Wait()
	rate := float64(done.Load()) / time.Since(floodStart).Seconds()
	t.Logf("failed logins answered: %d (%.0f/s), dial or read errors %d, fastest answer %v", done.Load(), rate, failed.Load(), time.Duration(minAnswer.Load()))
	t.Logf("producer before: %d acks p50 %v p99 %v; during the flood: %d acks p50 %v p99 %v, %d errors", n0, p50b, p99b, n1, p50f, p99f, errs)
	if time.Duration(minAnswer.Load()) < 100*time.Millisecond {
		t.Errorf("a failed login was answered after %v, before the 100 ms delay", time.Duration(minAnswer.Load()))
	}
	if errs > 0 || n1 < n0/2 {
		t.Errorf("the producer suffered: %d acks during vs %d before, %d errors", n1, n0, errs)
	}
	if auths := b.metric(t, "kafka_server_socketservermetrics_authentication_total", "result", "failure"); auths < float64(done.Load()) {
		t.Errorf("failures counted %v, answered %d", auths, done.Load())
	}

	// Bad input: baseline RSS, then 10,000 bad connections (and 500
	// holding an announced 512 KiB frame open), then RSS again.
	forceGC(t, b)
	rss0, heap0 := b.procStatus("VmRSS"), b.metric(t, "go_memstats_heap_inuse_bytes")
	rnd := rand.New(rand.NewPCG(1, 2))
	var held []net.Conn
	for i := range 500 {
		c, err := net.Dial("tcp", sasl)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		frame := binary.BigEndian.AppendUint32(nil, 524288)
		frame = append(frame, 0, 17, 0, 1, 0, 0, 0, byte(i)) // a SaslHandshake header, then nothing
		_, _ = c.Write(frame)
	}
	rssHeld := b.procStatus("VmRSS")
	for _, c := range held {
		c.Close()
	}
	var bad sync.WaitGroup
	for w := range 8 {
		bad.Add(1)
		seed := uint64(w)
		go func() {
			defer bad.Done()
			r := rand.New(rand.NewPCG(seed, 7))
			for range 1250 {
				c, err := net.Dial("tcp", sasl)
				if err != nil {
					continue
				}
				// A frame announcing more than it sends waits for the
				// rest: give up on it soon (the broker closes it on EOF).
				_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
				_, _ = c.Write(badPreAuthFrame(r))
				_, _ = io.Copy(io.Discard, c) // until the broker closes it
				c.Close()
			}
		}()
	}
	bad.Wait()
	_ = rnd
	forceGC(t, b)
	rss1, heap1 := b.procStatus("VmRSS"), b.metric(t, "go_memstats_heap_inuse_bytes")
	t.Logf("RSS before bad input %s (heap in use %.1f MiB), with 500 announced 512 KiB frames held %s, after 10,000 bad connections %s (heap in use %.1f MiB, %v goroutines)",
		mib(rss0), heap0/(1<<20), mib(rssHeld), mib(rss1), heap1/(1<<20), b.metric(t, "go_goroutines"))
	if rssHeld-rss0 > 32<<20 {
		t.Errorf("500 announced frames cost %s", mib(rssHeld-rss0))
	}
	if rss1-rss0 > 8<<20 {
		t.Errorf("bad input grew RSS by %s", mib(rss1-rss0))
	}
	if _, err := failedLogin(sasl); err != nil {
		t.Errorf("the SASL listener stopped answering: %v", err)
	}
}

// badPreAuthFrame is one of: a SaslHandshake or SaslAuthenticate with a
// random body, another API key, an oversized size, random bytes.
func badPreAuthFrame(r *rand.Rand) []byte {
	body := make([]byte, r.IntN(200))
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	hdr := func(key int16, ver int16) []byte {
		return []byte{byte(key >> 8), byte(key), byte(ver >> 8), byte(ver), 0, 0, 0, 1, 0, 0}
	}
	var payload []byte
	switch r.IntN(5) {
	case 0:
		payload = append(hdr(17, int16(r.IntN(2))), body...)
	case 1:
		payload = append(hdr(36, int16(r.IntN(3))), body...)
	case 2:
		payload = append(hdr(int16(r.IntN(70)), 0), body...)
	case 3:
		return binary.BigEndian.AppendUint32(nil, uint32(524289+r.IntN(1<<30)))
	default:
		return body
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

// forceGC runs a collection in the broker process (pprof's heap profile
// with gc=1) and lets the runtime return what it freed.
func forceGC(t *testing.T, b *hardBroker) {
	t.Helper()
	for range 2 {
		resp, err := http.Get(strings.TrimSuffix(b.Metrics, "/metrics") + "/debug/pprof/heap?gc=1")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
