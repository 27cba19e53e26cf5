package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkCompactionProduceImpact is the second half of issue 9's
// benchmark over TCP: a broker holds 1 GiB of 1 KiB records with 10%
// unique keys in a topic; a kgo producer (acks=all, 16 KiB batches)
// writes 1 KiB records to another topic all along. Its throughput (bytes
// acknowledged per second) is measured over 3 s before, over the whole
// cleaning pass of the 1 GiB topic (switched to cleanup.policy=compact;
// from the pass's "cleaning log" to its "cleaned log"), and over 3 s
// after. Client, broker and cleaner share this machine's cores. It
// reports the throughputs, the drop, the pass's length and the process's
// CPU use.
//
//	go test ./integration -run '^$' -bench BenchmarkCompactionProduceImpact -benchtime=1x
func BenchmarkCompactionProduceImpact(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchCompactionProduceImpact(b)
	}
}

func benchCompactionProduceImpact(b *testing.B) {
	b.StopTimer()
	br := startBroker(b, "", "log.cleaner.backoff.ms=50")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm := newAdmin(b, br.Seed())
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("67108864")}, "big"); err != nil {
		b.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "other"); err != nil {
		b.Fatal(err)
	}
	const recordSize = 1024
	size := 1 << 30
	if testing.Short() {
		size = 128 << 20
	}
	records := size / recordSize
	fill := newClient(b, br.Seed(), kgo.DefaultProduceTopic("big"), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<14),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	v := make([]byte, recordSize)
	rand.Read(v)
	var wg sync.WaitGroup
	var fillErr atomic.Value
	for n := 0; n < records; n++ {
		wg.Add(1)
		fill.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("key-%09d", (n*7919)%(records/10))), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				fillErr.Store(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := fillErr.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled %d MiB", size>>20)

	// One producer runs throughout; throughput is the bytes acknowledged
	// in a window, so ramp-up and draining do not count.
	p := newClient(b, br.Seed(), kgo.DefaultProduceTopic("other"), kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerLinger(time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	var acked atomic.Int64
	var stop atomic.Bool
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		rec := make([]byte, recordSize)
		for !stop.Load() {
			p.Produce(ctx, &kgo.Record{Value: rec}, func(r *kgo.Record, err error) {
				if err == nil {
					acked.Add(int64(len(r.Value)))
				}
			})
		}
		p.Flush(ctx)
	}()
	type mark struct {
		t     time.Time
		bytes int64
		cpu   time.Duration
	}
	now := func() mark { return mark{time.Now(), acked.Load(), processCPU()} }
	rate := func(a, z mark) (mibps, cores float64) {
		secs := z.t.Sub(a.t).Seconds()
		return float64(z.bytes-a.bytes) / secs / (1 << 20), (z.cpu - a.cpu).Seconds() / secs
	}
	time.Sleep(time.Second) // ramp up
	m0 := now()
	time.Sleep(3 * time.Second)
	m1 := now()

	b.StartTimer()
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, "big"); err != nil {
		b.Fatal(err)
	}
	// The pass starts (it logs "cleaning log", then maps the dirty
	// section) and ends ("cleaned log").
	for deadline := time.Now().Add(time.Minute); !strings.Contains(br.Logs.String(), "msg=\"cleaning log\""); {
		if time.Now().After(deadline) {
			b.Fatalf("the cleaner did not start on the topic:\n%s", br.Logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	m2 := now()
	for !strings.Contains(br.Logs.String(), "msg=\"cleaned log\"") {
		time.Sleep(time.Millisecond)
	}
	m3 := now()
	b.StopTimer()
	time.Sleep(3 * time.Second)
	m4 := now()
	stop.Store(true)
	pwg.Wait()

	before, coresBefore := rate(m0, m1)
	during, coresDuring := rate(m2, m3)
	after, coresAfter := rate(m3, m4)
	alone := (before + after) / 2
	b.ReportMetric(alone, "produce-MiB/s-alone")
	b.ReportMetric(during, "produce-MiB/s-cleaning")
	b.ReportMetric(100*(1-during/alone), "produce-drop-%")
	b.ReportMetric(m3.t.Sub(m2.t).Seconds(), "clean-s")
	b.ReportMetric((coresBefore+coresAfter)/2, "cores-alone")
	b.ReportMetric(coresDuring, "cores-cleaning")
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
