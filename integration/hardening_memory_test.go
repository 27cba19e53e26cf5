package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
)

// hardeningFull runs the issue 11 tests at the scale of the issue
// (MOLDAU_HARDENING_FULL=1); by default they run at a scale fit for
// ./test.sh.
func hardeningFull() bool { return os.Getenv("MOLDAU_HARDENING_FULL") != "" }

// Issue 11: concurrent 90 MB Produce requests took the broker to 3 GB (20
// of them) and got it OOM-killed (200). With GOMEMLIMIT=1GiB the request
// memory pool is 256 MiB: the broker's peak RSS stays under the budget
// plus 10%, every request is answered or its connection closed, and a
// small producer is acknowledged throughout.
func TestHugeProducesStayInMemoryBudget(t *testing.T) {
	const budget = 1 << 30
	conns := 24
	if hardeningFull() {
		conns = 200
	}
	if testing.Short() {
		conns = 6
	}
	b := startHardBroker(t, []string{"GOMEMLIMIT=1GiB"}, "num.partitions=1")
	if pool := b.metric(t, "kafka_network_socketserver_memorypoolavailable"); pool != budget/4 {
		t.Fatalf("memory pool %v, want a quarter of GOMEMLIMIT", pool)
	}
	adm := newAdmin(t, b.Addr)
	ctx := ctxTimeout(t, 10*time.Minute)
	big := "100000000"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &big}, "hard-accepted"); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"hard-refused", "hard-small"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	small := startLatencyProducer(t, b.Addr, "hard-small", 20*time.Millisecond)
	eventually(t, 30*time.Second, func() error {
		if small.acks() < 5 {
			return errString("the small producer is not acknowledged")
		}
		return nil
	})

	// One 90 MB batch of 90 records of 1 MB; every tenth request goes to
	// a topic that takes it, the others are refused (MESSAGE_TOO_LARGE)
	// once read. Both bodies are built once and shared by the writers.
	accepted, refused := hugeProduceBody(t, "hard-accepted"), hugeProduceBody(t, "hard-refused")
	t.Logf("%d connections, each sending a %s Produce request", conns, mib(int64(len(accepted))))

	// Sample the pool while they run.
	var peakUsed, peakWaiting atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(100 * time.Millisecond):
			}
			peakUsed.Store(max(peakUsed.Load(), int64(b.metric(t, "kafka_network_socketserver_memorypoolused"))))
			peakWaiting.Store(max(peakWaiting.Load(), int64(b.metric(t, "kafka_network_socketserver_memorypoolwaitingconnections"))))
		}
	}()
	start := time.Now()
	res := sendHugeProduces(t, ctx, b.Addr, conns, accepted, refused)
	end := time.Now()
	close(stopSampling)
	<-sampled

	peak := b.procStatus("VmHWM")
	n, p50, p99, worst, gap, errs, lastErr := small.stats(start, end)
	t.Logf("%d huge requests in %v: %d answered (%d appended, %d MESSAGE_TOO_LARGE), %d closed; broker peak RSS %s (budget %s); pool peak used %s, up to %d connections muted; small producer: %d acks, p50 %v, p99 %v, max %v, longest without an ack %v, %d errors",
		conns, end.Sub(start).Round(time.Millisecond), res.answered, res.ok, res.tooLarge, res.closed,
		mib(peak), mib(budget), mib(peakUsed.Load()), peakWaiting.Load(), n, p50, p99, worst, gap, errs)
	if res.answered+res.closed != conns {
		t.Fatalf("%d of %d requests neither answered nor closed", conns-res.answered-res.closed, conns)
	}
	if res.ok == 0 {
		t.Fatal("no huge request was appended")
	}
	if peak > budget*11/10 {
		t.Fatalf("broker peak RSS %s above the budget %s plus 10%%", mib(peak), mib(budget))
	}
	if conns > 4 && peakWaiting.Load() == 0 {
		t.Fatal("no connection was ever muted for memory")
	}
	if errs > 0 {
		t.Fatalf("the small producer failed %d times: %v", errs, lastErr)
	}
	if gap > 10*time.Second {
		t.Fatalf("the small producer went %v without an acknowledgement", gap)
	}
	if !b.alive() {
		t.Fatal("the broker died")
	}
}

// hugeResults counts the outcomes of sendHugeProduces.
type hugeResults struct{ answered, closed, ok, tooLarge int }

// sendHugeProduces sends conns Produce requests at once, each on its own
// connection: every tenth with body accepted, the others with refused.
func sendHugeProduces(t *testing.T, ctx context.Context, addr string, conns int, accepted, refused []byte) hugeResults {
	var mu sync.Mutex
	var res hugeResults
	var wg sync.WaitGroup
	for i := range conns {
		body := refused
		if i%10 == 0 {
			body = accepted
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, err := sendHugeProduce(ctx, addr, int32(i), body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				res.closed++
				t.Logf("connection %d closed without an answer: %v", i, err)
			case code == 0:
				res.answered++
				res.ok++
			case code == kerr.MessageTooLarge.Code:
				res.answered++
				res.tooLarge++
			default:
				res.answered++
				t.Errorf("request %d answered with error code %d", i, code)
			}
		}()
	}
	wg.Wait()
	return res
}

// hugeProduceBody encodes a Produce v9 request body carrying one 90 MB
// batch for partition 0 of topic.
func hugeProduceBody(t testing.TB, topic string) []byte {
	t.Helper()
	bb := log.NewBatchBuilder(0)
	value := make([]byte, 1<<20)
	now := time.Now().UnixMilli()
	for range 90 {
		bb.Add(now, nil, value)
	}
	batch, err := bb.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = 1
	req.TimeoutMillis = 60000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req.AppendTo(nil)
}

// sendHugeProduce sends one Produce v9 request with body on a new
// connection and returns the partition's error code; an error means the
// connection closed (or failed) without an answer.
func sendHugeProduce(ctx context.Context, addr string, corr int32, body []byte) (int16, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	if _, err := c.Write(requestHeader(0, 9, corr, "huge", len(body))); err != nil {
		return 0, err
	}
	if _, err := c.Write(body); err != nil {
		return 0, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return 0, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		return 0, err
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return 0, errors.New("wrong correlation id")
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	if err := resp.ReadFrom(buf[5:]); err != nil { // correlation id, header tags
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("malformed produce response")
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}
