package integration

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/moldau/moldau/log"
)

// idemBatch is one idempotent batch of n records stamped ts.
func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts time.Time, size int) []byte {
	t.Helper()
	b := log.NewBatchBuilder(0)
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = pid, epoch, seq
	}
	for i := 0; i < n; i++ {
		v := make([]byte, size)
		rand.Read(v) // incompressible, so segments fill
		b.Add(ts.UnixMilli(), nil, v)
	}
	out, err := b.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r *rawConn) listOffset(topic string, ts int64) int64 {
	r.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := r.do(req, 7).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		r.t.Fatalf("ListOffsets %d: %v", ts, kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// TestIdempotentProducerAfterRestart: a producer's batches are all in
// segments that retention deletes; the broker is then stopped cleanly or
// killed with SIGKILL and restarted. Its sequence state is intact: a retry
// of its last batch is answered with the original offset (no duplicate),
// the next sequence is accepted, a gap is OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestIdempotentProducerAfterRestart(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "clean", true: "kill9"}[kill], func(t *testing.T) {
			dir := t.TempDir()
			port := freePort(t)
			p := startProcess(t, dir, port, "log.retention.check.interval.ms=100")
			ctx := ctxTimeout(t, 90*time.Second)
			segBytes, retMs, delay := "1048576", "600000", "0"
			if _, err := newAdmin(t, p.Addr).CreateTopic(ctx, 1, 1, map[string]*string{
				"segment.bytes": &segBytes, "retention.ms": &retMs, "file.delete.delay.ms": &delay,
			}, "idem"); err != nil {
				t.Fatal(err)
			}
			rc := newRawConn(t, p.Addr)
			const pid, epoch = 424242, 3
			old := time.Now().Add(-time.Hour) // past retention.ms
			var seq int32
			var last kmsg.ProduceResponseTopicPartition
			var lastBatch []byte
			for i := 0; i < 5; i++ {
				lastBatch = idemBatch(t, pid, epoch, seq, 4, old, 100)
				if last = rc.produceRaw("idem", nil, lastBatch); last.ErrorCode != 0 {
					t.Fatal(kerr.ErrorForCode(last.ErrorCode))
				}
				seq += 4
			}
			// Other data, also old: several segments, then one fresh
			// record so the active segment stays.
			for i := 0; i < 40; i++ {
				if r := rc.produceRaw("idem", nil, idemBatch(t, -1, 0, 0, 10, old, 10<<10)); r.ErrorCode != 0 {
					t.Fatal(kerr.ErrorForCode(r.ErrorCode))
				}
			}
			if r := rc.produceRaw("idem", nil, idemBatch(t, -1, 0, 0, 1, time.Now(), 10)); r.ErrorCode != 0 {
				t.Fatal(kerr.ErrorForCode(r.ErrorCode))
			}
			eventually(t, 30*time.Second, func() error {
				if start := rc.listOffset("idem", -2); start <= last.BaseOffset+3 {
					return fmt.Errorf("log start %d: the producer's batches are not deleted yet", start)
				}
				return nil
			})
			if kill {
				p.kill(t)
			} else {
				p.stop(t)
			}
			p = startProcess(t, dir, port)
			rc = newRawConn(t, p.Addr)
			if want := map[bool]string{false: "recovery skipped", true: "recovery ran"}[kill]; !strings.Contains(p.Out.String(), want) {
				t.Fatalf("restart did not say %q:\n%s", want, p.Out.String())
			}

			if r := rc.produceRaw("idem", nil, lastBatch); r.ErrorCode != 0 || r.BaseOffset != last.BaseOffset {
				t.Fatalf("retry of the last batch after restart: %v at %d, want the original offset %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset, last.BaseOffset)
			}
			if r := rc.produceRaw("idem", nil, idemBatch(t, pid, epoch, seq+1, 1, time.Now(), 10)); r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
				t.Fatalf("gap after restart: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			if r := rc.produceRaw("idem", nil, idemBatch(t, pid, epoch, seq, 1, time.Now(), 10)); r.ErrorCode != 0 {
				t.Fatalf("next sequence after restart: %v", kerr.ErrorForCode(r.ErrorCode))
			}
		})
	}
}

// TestIdempotentKgoProducerAcrossRestarts: a franz-go idempotent producer
// keeps producing while the broker is killed with SIGKILL and later
// stopped cleanly, each time restarted on the same port. Every value is
// delivered, none twice: retries of batches the broker wrote before it
// died are recognised as duplicates from the recovered producer state.
func TestIdempotentKgoProducerAcrossRestarts(t *testing.T) {
	const total = 30000
	dir := t.TempDir()
	port := freePort(t)
	p := startProcess(t, dir, port, "num.partitions=2")
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic("idem-kgo"), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(time.Millisecond),
		kgo.RecordDeliveryTimeout(2*time.Minute), kgo.RetryTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var failed []error
	var wg sync.WaitGroup
	var acked atomic.Int64
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			v := binary.BigEndian.AppendUint64(nil, uint64(i))
			wg.Add(1)
			prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
					return
				}
				acked.Add(1)
			})
		}
	}
	// Each restart comes while records are in flight: some acknowledged,
	// the rest written or not when the broker goes.
	restartMidway := func(from, to int, kill bool) {
		produce(from, to)
		eventually(t, time.Minute, func() error {
			if n := acked.Load(); n < int64(from+(to-from)/4) {
				return fmt.Errorf("%d acknowledged", n)
			}
			return nil
		})
		if kill {
			p.kill(t)
		} else {
			p.stop(t)
		}
		p = startProcess(t, dir, port)
	}
	restartMidway(0, total/3, true)
	restartMidway(total/3, 2*total/3, false)
	produce(2*total/3, total)
	wg.Wait()
	t.Logf("%d records acknowledged", acked.Load())
	if len(failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
	}

	cons := newClient(t, p.Addr, kgo.ConsumeTopics("idem-kgo"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := make([]int, total)
	n := 0
	cctx := ctxTimeout(t, 60*time.Second)
	for n < total {
		fs := cons.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("consumed %d of %d", n, total)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		fs.EachRecord(func(r *kgo.Record) {
			seen[binary.BigEndian.Uint64(r.Value)]++
			n++
		})
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("value %d read %d times", i, c)
		}
	}
}
