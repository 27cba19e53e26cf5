package quota

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/moldau/moldau/broker/metadata"
)

func TestRateWindow(t *testing.T) {
	r := NewRate(11, 1000)
	steps := []struct {
		record   float64 // 0: measure only
		at       int64
		windowMs int64
		rate     float64
	}{
		// A new rate is measured over samples-1 windows plus the
		// part of the current one that passed.
		{100, 0, 10000, 10},
		{100, 500, 10500, 200 / 10.5},
		// A new sample after a whole window; still 10 windows.
		{100, 1000, 10000, 30},
		{0, 9999, 10999, 300 / 10.999},
		// Past samples-1 windows, the real span.
		{0, 10000, 10000, 30},
		{0, 10999, 10999, 300 / 10.999},
		// At 11 windows the first sample ages out (the 200 in it).
		{0, 11000, 10000, 10},
		// And at 12 the second: nothing left.
		{0, 12000, 10000, 0},
	}
	for _, s := range steps {
		if s.record != 0 {
			r.Record(s.record, s.at)
		}
		if got := r.WindowMs(s.at); got != s.windowMs {
			t.Fatalf("at %d: window %d ms, want %d", s.at, got, s.windowMs)
		}
		if got := r.Measure(s.at); !near(got, s.rate) {
			t.Fatalf("at %d: rate %v, want %v", s.at, got, s.rate)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

func TestThrottleTimeMs(t *testing.T) {
	for _, c := range []struct {
		observed, bound float64
		windowMs, want  int64
	}{
		{observed: 100, bound: 100, windowMs: 10000, want: 0},
		{observed: 50, bound: 100, windowMs: 10000, want: 0},
		{observed: 150, bound: 100, windowMs: 10000, want: 5000},
		{observed: 200, bound: 100, windowMs: 11000, want: 11000},
		{observed: 100.01, bound: 100, windowMs: 10000, want: 1},
		{observed: 100.004, bound: 100, windowMs: 10000, want: 0}, // rounds, as Kafka's Math.round
		{observed: 1, bound: 0, windowMs: 10000, want: 0},
	} {
		if got := ThrottleTimeMs(c.observed, c.bound, c.windowMs); got != c.want {
			t.Errorf("ThrottleTimeMs(%v, %v, %v) = %v, want %v", c.observed, c.bound, c.windowMs, got, c.want)
		}
	}
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) add(ms int64)   { c.t = c.t.Add(time.Duration(ms) * time.Millisecond) }
func quotaImage(q map[metadata.QuotaEntity]map[string]float64) *metadata.Image {
	return &metadata.Image{ClientQuotas: q}
}

var (
	dflt = metadata.QuotaName{Set: true, Default: true}
	none = metadata.QuotaName{}
)

func named(n string) metadata.QuotaName { return metadata.QuotaName{Set: true, Name: n} }

func TestClientQuotaThrottle(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_000_000)}
	im := quotaImage(map[metadata.QuotaEntity]map[string]float64{
		{ClientID: named("c")}: {ProducerByteRateKey: 1000, RequestPercentageKey: 50},
	})
	for _, c := range []struct {
		typ         Type
		maxThrottle time.Duration
		want        time.Duration
	}{
		// 15000 bytes over 10 s is 1500/s: (1500-1000)/1000 × 10 s.
		{Produce, 0, 5 * time.Second},
		// The request quota's throttle is bounded by one window.
		{Request, time.Second, time.Second},
		// Fetch has no quota here.
		{Fetch, 0, 0},
	} {
		m := NewClientQuotaManager(Config{Type: c.typ, Image: func() *metadata.Image { return im }, Now: clock.now, MaxThrottle: c.maxThrottle})
		if c.typ == Request {
			// 500 % over 10 s is 50 %/s, the quota itself.
			if d := m.Record(AnonymousUser, "c", 500); d != 0 {
				t.Fatalf("%v: throttled at the quota: %v", c.typ, d)
			}
			if d := m.Record(AnonymousUser, "c", 250); d != c.want {
				t.Fatalf("%v: throttle %v, want %v", c.typ, d, c.want)
			}
			continue
		}
		if d := m.Record(AnonymousUser, "c", 5000); d != 0 {
			t.Fatalf("%v: throttled under the quota: %v", c.typ, d)
		}
		if d := m.Record(AnonymousUser, "c", 10000); d != c.want {
			t.Fatalf("%v: throttle %v, want %v", c.typ, d, c.want)
		}
		if c.want == 0 {
			if _, ok := m.MaxValueInWindow(AnonymousUser, "c"); ok {
				t.Fatalf("%v: a window bound without a quota", c.typ)
			}
			continue
		}
		// Unrecording takes it back.
		m.Unrecord(AnonymousUser, "c", 10000)
		if d := m.Record(AnonymousUser, "c", 0); d != 0 {
			t.Fatalf("%v: throttled after unrecord: %v", c.typ, d)
		}
		if v, ok := m.MaxValueInWindow(AnonymousUser, "c"); !ok || v != 10000 {
			t.Fatalf("%v: max value in window %v %v, want 10000 (1000/s over 10 windows)", c.typ, v, ok)
		}
	}
}

func TestClientQuotaPrecedence(t *testing.T) {
	levels := []metadata.QuotaEntity{
		{User: named("alice"), ClientID: named("app")},
		{User: named("alice"), ClientID: dflt},
		{User: named("alice"), ClientID: none},
		{User: dflt, ClientID: named("app")},
		{User: dflt, ClientID: dflt},
		{User: dflt, ClientID: none},
		{User: none, ClientID: named("app")},
		{User: none, ClientID: dflt},
	}
	tags := []clientKey{
		{"alice", "app"}, {"alice", "app"}, {"alice", ""},
		{"alice", "app"}, {"alice", "app"}, {"alice", ""},
		{"", "app"}, {"", "app"},
	}
	quotas := map[metadata.QuotaEntity]map[string]float64{}
	for i, e := range levels {
		quotas[e] = map[string]float64{ConsumerByteRateKey: float64(i + 1)}
	}
	// Remove the most specific level one at a time: the next applies.
	for i := range levels {
		bound, got, ok := resolve(quotas, ConsumerByteRateKey, "alice", "app")
		if !ok || bound != float64(i+1) || got != tags[i] {
			t.Fatalf("level %d: got %v %+v %v, want %d %+v", i, bound, got, ok, i+1, tags[i])
		}
		// Other keys and other clients do not match.
		if _, _, ok := resolve(quotas, ProducerByteRateKey, "alice", "app"); ok {
			t.Fatal("producer_byte_rate matched a consumer_byte_rate quota")
		}
		delete(quotas, levels[i])
	}
	if _, _, ok := resolve(quotas, ConsumerByteRateKey, "alice", "app"); ok {
		t.Fatal("a quota with none set")
	}
	// A named level for another user or client does not apply.
	quotas[metadata.QuotaEntity{User: named("bob")}] = map[string]float64{ConsumerByteRateKey: 1}
	quotas[metadata.QuotaEntity{ClientID: named("other")}] = map[string]float64{ConsumerByteRateKey: 1}
	if _, _, ok := resolve(quotas, ConsumerByteRateKey, "alice", "app"); ok {
		t.Fatal("another entity's quota applied")
	}
}

// A new image is read at once: a changed quota applies to the next
// request with the samples kept, a removed one stops throttling and its
// metrics go.
func TestClientQuotaFollowsImage(t *testing.T) {
	clock := &fakeClock{t: time.UnixMilli(1_000_000)}
	user := metadata.QuotaEntity{User: named("alice")}
	im := quotaImage(map[metadata.QuotaEntity]map[string]float64{user: {ProducerByteRateKey: 1000}})
	reg := prometheus.NewRegistry()
	m := NewClientQuotaManager(Config{Type: Produce, Image: func() *metadata.Image { return im }, Now: clock.now, Registerer: reg})
	if d := m.Record("alice", "app", 20000); d != 10*time.Second {
		t.Fatalf("throttle %v, want 10s", d)
	}
	m.Throttled("alice", "app", 10*time.Second)
	if d := m.Record("bob", "app", 1e9); d != 0 {
		t.Fatalf("bob has no quota but was throttled %v", d)
	}
	want := []string{
		`kafka_server_produce_byte_rate{client_id="",user="alice"} 2000`,
		`kafka_server_produce_throttle_time{client_id="",user="alice"} 10000`,
	}
	if got := gather(t, reg); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("metrics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Doubled: the 20000 bytes recorded are now exactly the quota.
	im = quotaImage(map[metadata.QuotaEntity]map[string]float64{user: {ProducerByteRateKey: 2000}})
	if d := m.Record("alice", "app", 0); d != 0 {
		t.Fatalf("throttled %v at the new quota", d)
	}
	if d := m.Record("alice", "app", 2000); d != time.Second {
		t.Fatalf("throttle %v, want 1s (2200/s over 10 s against 2000)", d)
	}
	// Removed: nothing throttled, no series.
	im = quotaImage(nil)
	if d := m.Record("alice", "app", 1e9); d != 0 {
		t.Fatalf("throttled %v without a quota", d)
	}
	if got := gather(t, reg); len(got) != 0 {
		t.Fatalf("series without a quota: %v", got)
	}
	// Idle clients are forgotten after an hour.
	im = quotaImage(map[metadata.QuotaEntity]map[string]float64{user: {ProducerByteRateKey: 1000}})
	m.Record("alice", "app", 1)
	clock.add(inactiveExpiryMs + purgeEveryMs)
	m.mu.Lock()
	m.purge(clock.now().UnixMilli())
	n := len(m.clients) + len(m.sensors)
	m.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d clients and sensors left after an idle hour", n)
	}
}

// gather returns the registry's series as name{labels} value, sorted.
func gather(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			out = append(out, fmt.Sprintf("%s{%s} %v", mf.GetName(), strings.Join(ls, ","), m.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return out
}
