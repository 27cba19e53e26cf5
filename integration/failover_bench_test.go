package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkFailover measures how long a partition stops acknowledging
// writes when its leader goes: kill -9 of a leader that is not the active
// controller, kill -9 of one that is (combined mode), and SIGTERM
// (controlled shutdown). Three `moldau serve` processes with Kafka's
// default broker.session.timeout.ms (9 s), a topic with replication factor
// 3 and min.insync.replicas 2 led by the victim, an acks=all producer at
// about 2,000 records/s. Reported: the longest gap between two
// acknowledgements around each event, in seconds. The producer refreshes
// metadata at most every 250 ms (kgo's default is 5 s; the Java client
// asks again after retry.backoff.ms, 100 ms).
//
//	go test -run '^$' -bench Failover -benchtime 1x ./integration/
func BenchmarkFailover(b *testing.B) {
	nodes := newClusterNodes(b, 3)
	procs, start := startClusterProcesses(b, nodes, "broker.session.timeout.ms=9000", "broker.heartbeat.interval.ms=2000")
	seeds := []string{nodes[0].seed(), nodes[1].seed(), nodes[2].seed()}
	adm := newAdmin(b, joinSeeds(seeds))
	ctx := ctxTimeout(b, 20*time.Minute)
	cases := []struct {
		name       string
		controller bool // the victim is the active controller
		kill       bool // kill -9; else SIGTERM
	}{
		{"kill-leader", false, true},
		{"kill-leader-and-controller", true, true},
		{"sigterm-leader", false, false},
	}
	for range b.N {
		for i, c := range cases {
			md, err := adm.BrokerMetadata(ctx)
			if err != nil {
				b.Fatal(err)
			}
			victim := md.Controller
			if !c.controller {
				victim = victim%3 + 1
			}
			topic := fmt.Sprintf("failover-%d", i)
			createWithAssignment(b, seeds[0], topic, [][]int32{{victim, victim%3 + 1, (victim+1)%3 + 1}}, map[string]string{"min.insync.replicas": "2"})
			waitISR(b, adm, topic, 1, 3)
			gap := measureAckGap(b, ctx, seeds, topic, func() {
				if c.kill {
					procs[victim-1].kill(b)
				} else {
					procs[victim-1].stop(b)
				}
			})
			b.ReportMetric(gap.Seconds(), c.name+"-s")
			fmt.Printf("%s: no acknowledgement for %v\n", c.name, gap.Round(10*time.Millisecond))
			start(int(victim - 1))
			procs[victim-1].waitStarted(b)
			waitISR(b, adm, topic, 1, 3)
		}
	}
}

// measureAckGap produces to topic at about 2,000 records/s, runs event
// once two seconds of acknowledgements have come, and returns the longest
// gap between acknowledgements from a second before the event until ten
// seconds of acknowledgements after the first that follows it.
func measureAckGap(tb testing.TB, ctx context.Context, seeds []string, topic string, event func()) time.Duration {
	cl := newClient(tb, joinSeeds(seeds), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
		kgo.MetadataMinAge(250*time.Millisecond), kgo.RecordDeliveryTimeout(2*time.Minute), kgo.ProducerLinger(0))
	defer cl.Close()
	var mu sync.Mutex
	var acks []time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			cl.Produce(ctx, &kgo.Record{Value: []byte("x")}, func(_ *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acks = append(acks, time.Now())
					mu.Unlock()
				}
			})
		}
	}()
	acksSince := func(t time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range acks {
			if a.After(t) {
				n++
			}
		}
		return n
	}
	began := time.Now()
	eventually(tb, 30*time.Second, func() error {
		if acksSince(began.Add(time.Second)) < 1000 {
			return fmt.Errorf("producer not running yet")
		}
		return nil
	})
	at := time.Now()
	event()
	eventually(tb, 2*time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		i, _ := slices.BinarySearchFunc(acks, at, func(a, t time.Time) int { return a.Compare(t) })
		if i == len(acks) || time.Since(acks[i]) < 10*time.Second {
			return fmt.Errorf("waiting for ten seconds of acknowledgements after the event")
		}
		return nil
	})
	close(stop)
	wg.Wait()
	if err := cl.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(acks, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	for i := 1; i < len(acks); i++ {
		if acks[i].After(at.Add(-time.Second)) {
			gap = max(gap, acks[i].Sub(acks[i-1]))
		}
	}
	return gap
}
