package console

import (
	"reflect"
	"testing"
	"time"
)

func TestFlowMeter(t *testing.T) {
	var m flowMeter
	t0 := time.Unix(1000, 0)
	hw := counterKey{'h', "", "a", 0}
	seq := counterKey{'s', "7", "a", 0}
	at := func(d time.Duration, v map[counterKey]int64) func(counterKey) float64 { return m.observe(t0.Add(d), v) }

	if r := at(0, map[counterKey]int64{hw: 100, seq: 50})(hw); r != 0 {
		t.Fatalf("first sample: rate %v, want 0", r)
	}
	r := at(time.Second, map[counterKey]int64{hw: 110, seq: 40})
	if got := r(hw); got != 10 {
		t.Errorf("+10 in 1s: %v, want 10", got)
	}
	if got := r(seq); got != 0 {
		t.Errorf("a sequence that went down (new epoch): %v, want 0", got)
	}
	r = at(2*time.Second, map[counterKey]int64{hw: 125, seq: 45, {'c', "g", "a", 0}: 3})
	if got := r(hw); got != 12.5 {
		t.Errorf("+25 in 2s: %v, want 12.5", got)
	}
	if got := r(counterKey{'c', "g", "a", 0}); got != 0 {
		t.Errorf("a counter seen first: %v, want 0", got)
	}
	// The window is 3 s: the sample at 0 falls out once one at or before
	// now-3s is newer than it.
	r = at(4*time.Second, map[counterKey]int64{hw: 135})
	if got := r(hw); got != round1(25.0/3) {
		t.Errorf("+25 in 3s (the 1s sample as base): %v, want %v", got, round1(25.0/3))
	}
	if len(m.samples) != 3 {
		t.Errorf("%d samples kept, want 3 (1s, 2s, 4s)", len(m.samples))
	}
	at(6*time.Second, map[counterKey]int64{hw: 135})
	if got := at(8*time.Second, map[counterKey]int64{hw: 135})(hw); got != 0 {
		t.Errorf("idle for the whole window: %v, want 0", got)
	}
}

// flowSnapshot is three brokers; a has two partitions led by 1 and 2,
// every replica on every broker; group g's member m reads both;
// transaction tx (producer id 9) is coordinated by 3.
func flowSnapshot() *Snapshot {
	return &Snapshot{
		Brokers: []Broker{{ID: 1, Alive: true}, {ID: 2, Alive: true}, {ID: 3, Alive: true}},
		Topics: []Topic{{Name: "a", Partitions: []Partition{
			part(0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 100),
			part(1, 2, []int32{2, 3, 1}, []int32{2, 3, 1}, 0, 200),
		}}},
		Groups: []Group{{ID: "g", Coordinator: 3, Members: []Member{{ID: "m", Assigned: []TopicPartitions{{Topic: "a", Partitions: []int32{0, 1}}}}},
			Offsets: []GroupOffset{{Topic: "a", Partition: 0, Committed: 90}, {Topic: "a", Partition: 1, Committed: 180}}}},
		Transactions: []Transaction{{ID: "tx", ProducerID: 9, Coordinator: 3}},
	}
}

// flowsAfter runs two polls one second apart: s0, then s1 with every
// high watermark and committed offset 10 further and producer 9's
// sequence 10 further on both partitions.
func flowsAfter(t *testing.T, s1 *Snapshot, prev *Snapshot) *Snapshot {
	t.Helper()
	var m flowMeter
	t0 := time.Unix(1000, 0)
	s0 := flowSnapshot()
	desc := func(seq int32) map[tp][]activeProducer {
		return map[tp][]activeProducer{
			{"a", 0}: {{id: 9, lastSeq: seq, lastTime: t0.UnixMilli()}, {id: 4, lastSeq: 3, lastTime: t0.Add(-time.Hour).UnixMilli()}},
			{"a", 1}: {{id: 9, lastSeq: seq, lastTime: t0.UnixMilli()}},
		}
	}
	m.observe(t0, flowCounters(s0, desc(20), nil))
	for ti := range s1.Topics {
		for pi := range s1.Topics[ti].Partitions {
			s1.Topics[ti].Partitions[pi].HighWatermark += 10
		}
	}
	for gi := range s1.Groups {
		for oi := range s1.Groups[gi].Offsets {
			s1.Groups[gi].Offsets[oi].Committed += 10
		}
	}
	rate := m.observe(t0.Add(time.Second), flowCounters(s1, desc(30), nil))
	producers, more := producersFrom(s1, desc(30), nil, rate, t0.Add(time.Second))
	if more != 0 {
		t.Fatalf("%d producers left out", more)
	}
	for _, pf := range producers {
		s1.Producers = append(s1.Producers, pf.Producer)
	}
	s1.Wires = wiresFrom(s1, prev, producers, rate)
	return s1
}

func TestWiresFrom(t *testing.T) {
	s := flowsAfter(t, flowSnapshot(), nil)
	wantProducers := []Producer{{ID: "pid-9", Name: "tx", ProducerID: 9, TransactionalID: "tx",
		Partitions: []TopicPartitions{{Topic: "a", Partitions: []int32{0, 1}}}, Rate: 20}}
	if !reflect.DeepEqual(s.Producers, wantProducers) {
		t.Errorf("producers (4 idle for an hour is left out):\n got %+v\nwant %+v", s.Producers, wantProducers)
	}
	want := []Wire{
		{Kind: WireConsume, From: "broker:1", To: "member:g/m", Partitions: 1, Rate: 10},
		{Kind: WireConsume, From: "broker:2", To: "member:g/m", Partitions: 1, Rate: 10},
		{Kind: WireGroupCoordinator, From: "group:g", To: "broker:3", Partitions: 1},
		{Kind: WireProduce, From: "producer:pid-9", To: "broker:1", Partitions: 1, Rate: 10},
		{Kind: WireProduce, From: "producer:pid-9", To: "broker:2", Partitions: 1, Rate: 10},
		{Kind: WireReplicate, From: "broker:1", To: "broker:2", Partitions: 1, Rate: 10},
		{Kind: WireReplicate, From: "broker:1", To: "broker:3", Partitions: 1, Rate: 10},
		{Kind: WireReplicate, From: "broker:2", To: "broker:1", Partitions: 1, Rate: 10},
		{Kind: WireReplicate, From: "broker:2", To: "broker:3", Partitions: 1, Rate: 10},
		{Kind: WireTxnCoordinator, From: "producer:pid-9", To: "broker:3", Partitions: 1},
	}
	if !reflect.DeepEqual(s.Wires, want) {
		t.Fatalf("wires:\n got %+v\nwant %+v", s.Wires, want)
	}
}

// Broker 1 dies and broker 2 takes over partition 0: the wires that
// reached 1 stay, grey (down, no rate), and new ones reach 2.
func TestWiresBrokerDown(t *testing.T) {
	before := flowsAfter(t, flowSnapshot(), nil)
	after := flowSnapshot()
	after.Brokers[0].Alive = false
	after.Topics[0].Partitions[0].Leader = 2
	after.Topics[0].Partitions[0].ISR = []int32{2, 3}
	after = flowsAfter(t, after, before)
	got := map[string]Wire{}
	for _, w := range after.Wires {
		got[w.Kind+" "+w.From+" "+w.To] = w
	}
	for _, k := range []string{"produce producer:pid-9 broker:1", "consume broker:1 member:g/m", "replicate broker:1 broker:2",
		"replicate broker:1 broker:3", "replicate broker:2 broker:1"} {
		if w, ok := got[k]; !ok || !w.Down || w.Rate != 0 {
			t.Errorf("%s: %+v (present %v), want down with no rate", k, w, ok)
		}
	}
	for k, parts := range map[string]int{"produce producer:pid-9 broker:2": 2, "consume broker:2 member:g/m": 2, "replicate broker:2 broker:3": 2} {
		if w, ok := got[k]; !ok || w.Down || w.Partitions != parts || w.Rate != 20 {
			t.Errorf("%s: %+v (present %v), want up, %d partitions, 20/s", k, w, ok, parts)
		}
	}
	// Broker 1 back: the kept wires go, what the metadata says stays.
	back := flowSnapshot()
	back.Topics[0].Partitions[0].Leader = 2
	back = flowsAfter(t, back, after)
	for _, w := range back.Wires {
		if w.Down {
			t.Errorf("broker 1 is back, yet %+v is down", w)
		}
		if w.Kind == WireProduce && w.To == "broker:1" {
			t.Errorf("a produce wire to broker 1, which leads nothing: %+v", w)
		}
	}
}

// A named producer: with a producer id, its entries are its own (not a
// second box); without one, its records spread over its topic.
func TestProducersFromNamed(t *testing.T) {
	s := flowSnapshot()
	now := time.Unix(1000, 0)
	desc := map[tp][]activeProducer{{"a", 1}: {{id: 9, lastSeq: 5, lastTime: now.UnixMilli()}}}
	var m flowMeter
	named := []NamedProducer{{Name: "p1", ClientID: "moldau-dev-p1", Topic: "a", ProducerID: 9, Records: 10},
		{Name: "p2", Topic: "a", ProducerID: -1, Records: 100}}
	m.observe(now, flowCounters(s, desc, named))
	named[1].Records = 140
	rate := m.observe(now.Add(2*time.Second), flowCounters(s, desc, named))
	got, _ := producersFrom(s, desc, named, rate, now.Add(2*time.Second))
	if len(got) != 2 {
		t.Fatalf("%d producers, want 2: %+v", len(got), got)
	}
	if p := got[0]; p.Name != "p1" || p.ProducerID != 9 || !reflect.DeepEqual(p.Partitions, []TopicPartitions{{Topic: "a", Partitions: []int32{1}}}) {
		t.Errorf("p1: %+v", p.Producer)
	}
	if p := got[1]; p.Name != "p2" || p.Rate != 20 || len(p.flows) != 2 || p.flows[0].rate != 10 {
		t.Errorf("p2 (40 records in 2 s over 2 partitions): %+v %+v", p.Producer, p.flows)
	}
}

func TestWiredGroupsBound(t *testing.T) {
	var gs []Group
	for i := range maxWiredGroups + 5 {
		g := Group{ID: string(rune('a' + i))}
		if i%2 == 1 {
			g.Members = []Member{{ID: "m"}}
		}
		gs = append(gs, g)
	}
	got := wiredGroups(gs)
	if len(got) != maxWiredGroups || len(got[0].Members) == 0 || got[0].ID != "b" {
		t.Fatalf("wired groups: %d, first %+v; want %d, those with members first", len(got), got[0], maxWiredGroups)
	}
}

func TestMetricsTarget(t *testing.T) {
	for _, tc := range []struct {
		in     string
		broker int32
		url    string
	}{
		{"http://h:9308/metrics", -1, "http://h:9308/metrics"},
		{"2=http://h:9308/metrics", 2, "http://h:9308/metrics"},
		{"0=http://h/metrics?a=b", 0, "http://h/metrics?a=b"},
		{"http://h/metrics?a=b", -1, "http://h/metrics?a=b"},
		{"x=http://h/metrics", -1, "x=http://h/metrics"},
		{"-1=http://h/metrics", -1, "-1=http://h/metrics"},
	} {
		if b, u := metricsTarget(tc.in); b != tc.broker || u != tc.url {
			t.Errorf("metricsTarget(%q) = %d, %q; want %d, %q", tc.in, b, u, tc.broker, tc.url)
		}
	}
}

// A broker's byte rates are shared over its wires by their records per
// second; a broker with no metrics, or a down wire, gets none.
func TestApplyBytes(t *testing.T) {
	wires := []Wire{
		{Kind: WireProduce, From: "producer:a", To: "broker:1", Rate: 30},
		{Kind: WireProduce, From: "producer:b", To: "broker:1", Rate: 10},
		{Kind: WireProduce, From: "producer:a", To: "broker:2", Rate: 10},
		{Kind: WireConsume, From: "broker:1", To: "member:g/m", Rate: 5},
		{Kind: WireReplicate, From: "broker:1", To: "broker:2", Rate: 40},
		{Kind: WireReplicate, From: "broker:1", To: "broker:3", Down: true},
		{Kind: WireGroupCoordinator, From: "group:g", To: "broker:1"},
	}
	metrics := []Metrics{
		{URL: "u1", Broker: 1, BytesInRate: 4000, BytesOutRate: 500, ReplicationBytesOutRate: 4000},
		{URL: "u2", Broker: -1, BytesInRate: 999},
	}
	applyBytes(wires, metrics, []Broker{{ID: 1}, {ID: 2}, {ID: 3}})
	got := []float64{}
	for _, w := range wires {
		got = append(got, w.Bytes)
	}
	if want := []float64{3000, 1000, 0, 500, 4000, 0, 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("bytes per wire %v, want %v", got, want)
	}
	// One URL without an id on a one-broker cluster is that broker's.
	one := []Wire{{Kind: WireProduce, From: "producer:a", To: "broker:5", Rate: 1}}
	applyBytes(one, []Metrics{{URL: "u", Broker: -1, BytesInRate: 100}}, []Broker{{ID: 5}})
	if one[0].Bytes != 100 {
		t.Fatalf("one broker, one URL: %v bytes/s, want 100", one[0].Bytes)
	}
}
