package integration

import (
	"context"
	"flag"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var quotaBenchMeasure = flag.Duration("quotabench.measure", time.Minute, "how long BenchmarkProducerQuotaSteadyState measures")

// BenchmarkProducerQuotaSteadyState: a producer with a 1 MB/s
// producer_byte_rate (Kafka's default 11 windows of 1 s) and an
// unthrottled producer run at full speed on one broker. After a warm-up
// that spends the throttled client's initial burst (up to ten windows'
// worth, as Kafka's Rate allows), it reports the throttled producer's
// request bytes per second against the quota over -quotabench.measure
// (a minute by default), and the unthrottled producer's rate with and
// without the other running.
//
//	go test -run '^$' -bench ProducerQuotaSteadyState -benchtime 1x ./integration/
func BenchmarkProducerQuotaSteadyState(b *testing.B) {
	for range b.N {
		br := startBroker(b, "")
		adm := newAdmin(b, br.Seed())
		ctx := ctxTimeout(b, 10*time.Minute)
		for _, topic := range []string{"held", "free"} {
			if _, err := adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
				b.Fatal(err)
			}
		}
		entity := kadm.ClientQuotaEntity{{Type: "client-id", Name: kgoStr("held")}}
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quotaRate}}}})
		if err != nil || res[0].Err != nil {
			b.Fatal(err, res)
		}
		alone := produceFor(b, newClient(b, br.Seed(), kgo.ClientID("free"), uncompressed), "free", 10*time.Second)

		// Request bytes, as the quota counts them, from kgo's write hook.
		var written atomic.Int64
		var measuring atomic.Bool
		hook := writeHook(func(n int) {
			if measuring.Load() {
				written.Add(int64(n))
			}
		})
		held := newClient(b, br.Seed(), kgo.ClientID("held"), kgo.WithHooks(hook), uncompressed)
		freeCl := newClient(b, br.Seed(), kgo.ClientID("free"), uncompressed)
		hctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			value := randomValue()
			for hctx.Err() == nil {
				held.Produce(hctx, &kgo.Record{Topic: "held", Value: value}, nil)
			}
		}()
		time.Sleep(15 * time.Second) // warm-up: the initial burst is spent (a measurement, not a wait for a condition)
		measuring.Store(true)
		start := time.Now()
		beside := produceFor(b, freeCl, "free", *quotaBenchMeasure)
		elapsed := time.Since(start)
		measuring.Store(false)
		stop()
		wg.Wait()
		rate := float64(written.Load()) / elapsed.Seconds()
		b.ReportMetric(rate/quotaRate, "x-quota")
		b.ReportMetric(alone/1e6, "MB/s-free-alone")
		b.ReportMetric(beside/1e6, "MB/s-free-beside")
		b.Logf("throttled producer: %.0f request B/s over %v (quota %d, %.3f×); unthrottled: %.1f MB/s alone, %.1f MB/s beside it",
			rate, elapsed.Round(time.Second), quotaRate, rate/quotaRate, alone/1e6, beside/1e6)
	}
}

// writeHook counts the bytes a client writes to brokers.
type writeHook func(int)

func (h writeHook) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, n int, _, _ time.Duration, _ error) {
	h(n)
}
