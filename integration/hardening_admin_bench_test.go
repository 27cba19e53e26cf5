package integration

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkProduceDuringCreatePartitions measures a producer's latency
// (acks=all, one small record every 2 ms) while the broker is idle, while
// a CreatePartitions adds 10,000 partitions to a topic (until the broker
// has created their logs), and while that topic is deleted (issue 11,
// point 4: admin work never stalls the data path; the target is a p99
// within 2x of idle). It reports the p50, p99 and max of each phase in ms
// and the time the broker took to apply each change.
//
//	go test -run XXX -bench BenchmarkProduceDuringCreatePartitions -benchtime 1x ./integration/
func BenchmarkProduceDuringCreatePartitions(b *testing.B) {
	for range b.N {
		benchProduceDuringAdmin(b)
	}
}

func benchProduceDuringAdmin(b *testing.B) {
	const idle = 5 * time.Second
	br := startHardBroker(b, nil)
	adm := newAdmin(b, br.Addr)
	ctx := ctxTimeout(b, 10*time.Minute)
	if _, err := adm.CreateTopic(ctx, 8, 1, nil, "lat"); err != nil {
		b.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "grow"); err != nil {
		b.Fatal(err)
	}
	p := startLatencyProducer(b, br.Addr, "lat", 2*time.Millisecond)
	eventually(b, 30*time.Second, func() error {
		if p.acks() < 100 {
			return errString("warming up")
		}
		return nil
	})

	phase := func(name string, run func()) {
		from := len(p.latencies)
		start := time.Now()
		run()
		took := time.Since(start)
		p.mu.Lock()
		lat := slices.Clone(p.latencies[from:])
		p.mu.Unlock()
		slices.Sort(lat)
		if len(lat) == 0 {
			b.Fatalf("%s: no acknowledgement", name)
		}
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		p50, p99, worst := lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
		b.ReportMetric(ms(p50), name+"-p50-ms")
		b.ReportMetric(ms(p99), name+"-p99-ms")
		b.ReportMetric(ms(worst), name+"-max-ms")
		b.ReportMetric(took.Seconds(), name+"-s")
		b.Logf("%s: %d acks in %v: p50 %v, p99 %v, max %v", name, len(lat), took.Round(time.Millisecond), p50, p99, worst)
	}
	// appliedAfter waits until the broker logs that it applied a delta
	// with what (its ReplicaManager has created or deleted the logs).
	appliedAfter := func(mark int, what string) {
		eventually(b, 5*time.Minute, func() error {
			for _, line := range strings.Split(br.Out.String()[mark:], "\n") {
				if strings.Contains(line, `msg="applied metadata"`) && strings.Contains(line, what) {
					return nil
				}
			}
			return errString("not applied yet")
		})
	}
	phase("idle", func() { time.Sleep(idle) })
	phase("create-10000", func() {
		mark := len(br.Out.String())
		if _, err := adm.CreatePartitions(ctx, 10000, "grow"); err != nil {
			b.Fatal(err)
		}
		appliedAfter(mark, "partitions_added=10000")
	})
	phase("delete-10001", func() {
		mark := len(br.Out.String())
		if _, err := adm.DeleteTopic(ctx, "grow"); err != nil {
			b.Fatal(err)
		}
		appliedAfter(mark, "partitions_deleted=10001")
	})
	p.stop()
	if _, _, _, _, _, errs, lastErr := p.stats(time.Time{}, time.Now()); errs > 0 {
		b.Fatalf("the producer failed %d times: %v", errs, lastErr)
	}
}
