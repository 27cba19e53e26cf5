package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/moldau/moldau/cmd/moldau/dev"
)

// devState is GET /api/dev/state.
func (d *devProcess) state() dev.State {
	d.t.Helper()
	resp, err := http.Get(d.url + "/api/dev/state")
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	var s dev.State
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		d.t.Fatal(err)
	}
	return s
}

// `moldau dev slow`: every write of the partition leader's logs waits the
// delay, so an acks=all produce to a partition it leads takes at least
// the delay; cleared, produce latency is back to what it was.
func TestDevSlowDisk(t *testing.T) {
	d := startDev(t, "--partitions", "1", "--override", "auto.leader.rebalance.enable=false")
	p, _, err := d.partition0()
	if err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for _, n := range d.state().Nodes {
		seeds = append(seeds, n.ClientAddr)
	}
	cl := newClient(t, strings.Join(seeds, ","), kgo.DefaultProduceTopic("dev"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	// latencies produces one record at a time, n times, each acks=all.
	latencies := func(n int) []time.Duration {
		t.Helper()
		var out []time.Duration
		for i := range n {
			start := time.Now()
			if err := cl.ProduceSync(ctxTimeout(t, 30*time.Second), &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			out = append(out, time.Since(start))
		}
		slices.Sort(out)
		return out
	}
	before := latencies(10)
	const delay = 300 * time.Millisecond
	leader := strconv.Itoa(int(p.Leader))
	d.cli("slow", leader, "--delay", delay.String())
	if s := d.state(); s.Nodes[p.Leader-1].DiskDelayMs != delay.Milliseconds() {
		t.Fatalf("node %d's disk delay in the state: %d ms", p.Leader, s.Nodes[p.Leader-1].DiskDelayMs)
	}
	slow := latencies(5)
	d.cli("slow", leader, "--delay", "0")
	after := latencies(10)
	t.Logf("acks=all produce to partition 0 led by node %d: before %v, disk +%v %v, cleared %v", p.Leader, before, delay, slow, after)
	if slow[0] < delay {
		t.Fatalf("with node %d's disk slowed by %v, a produce took %v", p.Leader, delay, slow[0])
	}
	// Loosely: the median is back under the delay (the machine may be busy).
	if after[len(after)/2] >= delay {
		t.Fatalf("with the disk back to normal, median produce %v (before %v)", after[len(after)/2], before)
	}
	resp, err := http.Get(d.url + "/api/dev/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var log struct{ Events []dev.Event }
	json.NewDecoder(resp.Body).Decode(&log)
	var slowed, cleared bool
	for _, e := range log.Events {
		slowed = slowed || (e.Kind == "fault" && strings.Contains(e.Text, "disk slowed by 300ms"))
		cleared = cleared || (e.Kind == "fault" && strings.Contains(e.Text, "disk back to normal"))
	}
	if !slowed || !cleared {
		t.Fatalf("the event log lacks the slow disk (%v) or its end (%v)", slowed, cleared)
	}
}
