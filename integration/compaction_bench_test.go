package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
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
// writes 1 KiB records to another topic, first with the cleaner idle,
// then while the cleaner compacts the 1 GiB topic (switched to
// cleanup.policy=compact). Client and broker share this machine's cores
// with the cleaner. It reports both throughputs and the drop.
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

	p := newClient(b, br.Seed(), kgo.DefaultProduceTopic("other"), kgo.ProducerBatchMaxBytes(16<<10), kgo.ProducerLinger(time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	var cores float64 // CPU cores the process used in the last produce()
	produce := func(until func() bool) float64 {
		var bytes atomic.Int64
		var wg sync.WaitGroup
		start, cpu0 := time.Now(), processCPU()
		defer func() { cores = (processCPU() - cpu0).Seconds() / time.Since(start).Seconds() }()
		rec := make([]byte, recordSize)
		for !until() {
			wg.Add(1)
			p.Produce(ctx, &kgo.Record{Value: rec}, func(r *kgo.Record, err error) {
				if err == nil {
					bytes.Add(int64(len(r.Value)))
				}
				wg.Done()
			})
		}
		wg.Wait()
		return float64(bytes.Load()) / time.Since(start).Seconds() / (1 << 20)
	}
	for3s := func() func() bool {
		d := time.Now().Add(3 * time.Second)
		return func() bool { return time.Now().After(d) }
	}
	before := produce(for3s())
	coresAlone := cores

	b.StartTimer()
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, "big"); err != nil {
		b.Fatal(err)
	}
	partDir := filepath.Join(br.Dir, "big-0")
	for deadline := time.Now().Add(time.Minute); !hasFileWithSuffix(partDir, ".cleaned"); {
		if time.Now().After(deadline) {
			b.Fatalf("the cleaner did not start on the topic:\n%s", br.Logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	cleaned := func() bool { return strings.Contains(br.Logs.String(), "msg=\"cleaned log\"") }
	during := produce(cleaned)
	coresDuring := cores
	b.StopTimer()
	cleanTime := time.Since(start)
	after := produce(for3s())
	alone := (before + after) / 2
	b.ReportMetric(alone, "produce-MiB/s-alone")
	b.ReportMetric(during, "produce-MiB/s-cleaning")
	b.ReportMetric(100*(1-during/alone), "produce-drop-%")
	b.ReportMetric(cleanTime.Seconds(), "clean-s")
	b.ReportMetric(coresAlone, "cores-alone")
	b.ReportMetric(coresDuring, "cores-cleaning")
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
