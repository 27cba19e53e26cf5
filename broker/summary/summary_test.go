package summary

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestBuckets(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<20; v++ {
		i := bucketOf(v)
		if i < prev || i > prev+1 {
			t.Fatalf("bucketOf(%d) = %d after %d: buckets must be consecutive", v, i, prev)
		}
		prev = i
		mid := bucketMid(i)
		if v >= sub && math.Abs(mid-float64(v))/float64(v) > 1.0/sub {
			t.Fatalf("value %d in bucket %d reported as %v: more than 1/%d off", v, i, mid, sub)
		}
		if v < sub && mid != float64(v) {
			t.Fatalf("small value %d reported as %v", v, mid)
		}
	}
	if got := bucketOf(math.MaxUint64); got != numBuckets-1 {
		t.Fatalf("bucketOf(max) = %d, want the last bucket %d", got, numBuckets-1)
	}
	if got := bucketOf(1<<maxBits - 1); got != numBuckets-1 {
		t.Fatalf("bucketOf(2^%d-1) = %d, want %d", maxBits, got, numBuckets-1)
	}
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newTestVec(c *clock) *Vec {
	return NewVec(Opts{
		Name: "test_time_ms", Help: "test", Objectives: []float64{0.5, 0.9, 0.99, 0.999},
		Unit: 0.001, MaxAge: 5 * time.Minute, AgeBuckets: 5, Now: c.Now,
	}, []string{"request"})
}

// collect gathers v through a registry, as Prometheus scrapes it.
func collect(t *testing.T, v *Vec) map[string]*dto.Summary {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(v)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Summary{}
	for _, f := range fams {
		if f.GetName() != "test_time_ms" || f.GetType() != dto.MetricType_SUMMARY {
			t.Fatalf("family %s of type %v", f.GetName(), f.GetType())
		}
		for _, m := range f.Metric {
			out[m.Label[0].GetValue()] = m.Summary
		}
	}
	return out
}

func quantileOf(s *dto.Summary, q float64) float64 {
	for _, x := range s.Quantile {
		if x.GetQuantile() == q {
			return x.GetValue()
		}
	}
	return math.NaN()
}

func TestQuantilesMatchExactOnes(t *testing.T) {
	c := &clock{now: time.Unix(1000, 0)}
	v := newTestVec(c)
	s := v.WithLabelValues("Produce")
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []float64
	var sum float64
	for range 100_000 {
		x := math.Exp(rng.NormFloat64()*1.5) * 3 // lognormal, ms
		vals = append(vals, x)
		sum += x
		s.Observe(x)
	}
	slices.Sort(vals)
	got := collect(t, v)["Produce"]
	if got.GetSampleCount() != 100_000 || math.Abs(got.GetSampleSum()-sum) > 1e-3*sum {
		t.Fatalf("count %d sum %v, want 100000 and %v", got.GetSampleCount(), got.GetSampleSum(), sum)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		if g := quantileOf(got, q); math.Abs(g-exact)/exact > 1.0/sub {
			t.Errorf("quantile %v: %v, exact %v (more than 1/%d off)", q, g, exact, sub)
		}
	}
}

func TestWindowSlides(t *testing.T) {
	c := &clock{now: time.Unix(1000, 0)}
	v := newTestVec(c)
	s := v.WithLabelValues("Fetch")
	for range 1000 {
		s.Observe(500) // slow, at first
	}
	c.add(2 * time.Minute)
	for range 1000 {
		s.Observe(1) // fast, later
	}
	got := collect(t, v)["Fetch"]
	if q := quantileOf(got, 0.99); math.Abs(q-500)/500 > 1.0/sub {
		t.Fatalf("p99 within the window %v, want about 500", q)
	}
	// Past MaxAge the slow ones have left the window; count and sum
	// have not.
	c.add(3*time.Minute + time.Second)
	got = collect(t, v)["Fetch"]
	if q := quantileOf(got, 0.99); math.Abs(q-1) > 1.0/sub {
		t.Fatalf("p99 after the slow values aged out: %v, want about 1", q)
	}
	if got.GetSampleCount() != 2000 || math.Abs(got.GetSampleSum()-501_000) > 1e-6 {
		t.Fatalf("count %d sum %v, want 2000 and 501000", got.GetSampleCount(), got.GetSampleSum())
	}
	// Nothing in the window: NaN, as client_golang reports it.
	c.add(10 * time.Minute)
	if q := quantileOf(collect(t, v)["Fetch"], 0.5); !math.IsNaN(q) {
		t.Fatalf("p50 of an empty window: %v, want NaN", q)
	}
	// A slice reused after a full turn of the ring starts empty.
	s.Observe(7)
	if q := quantileOf(collect(t, v)["Fetch"], 0.999); math.Abs(q-7)/7 > 1.0/sub {
		t.Fatalf("p99.9 after reuse: %v, want about 7", q)
	}
}

func TestConcurrentObservations(t *testing.T) {
	c := &clock{now: time.Unix(1000, 0)}
	v := newTestVec(c)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			s := v.WithLabelValues([]string{"Produce", "Fetch"}[g%2])
			for i := range 10_000 {
				s.Observe(float64(i % 100))
				if g == 0 && i%1000 == 0 {
					c.add(30 * time.Second) // slices rotate under the others
				}
			}
		})
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			collect(t, v)
		}
	}()
	wg.Wait()
	got := collect(t, v)
	if n := got["Produce"].GetSampleCount() + got["Fetch"].GetSampleCount(); n != 80_000 {
		t.Fatalf("count %d, want 80000", n)
	}
}

func TestNegativeAndNaN(t *testing.T) {
	c := &clock{now: time.Unix(1000, 0)}
	v := newTestVec(c)
	s := v.WithLabelValues("x")
	s.Observe(-5)
	s.Observe(math.NaN())
	got := collect(t, v)["x"]
	if got.GetSampleCount() != 1 || quantileOf(got, 0.5) != 0 {
		t.Fatalf("count %d p50 %v, want 1 (NaN dropped) and 0", got.GetSampleCount(), quantileOf(got, 0.5))
	}
}

// BenchmarkObserve against client_golang's Summary with the objectives and
// age buckets the broker used:
//
//	go test ./broker/summary -run '^$' -bench Observe
func BenchmarkObserve(b *testing.B) {
	b.Run("summary", func(b *testing.B) {
		s := NewVec(Opts{Name: "x", Objectives: []float64{0.5, 0.75, 0.95, 0.98, 0.99, 0.999}, Unit: 0.001, MaxAge: 5 * time.Minute}, []string{"request"}).WithLabelValues("Produce")
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				s.Observe(float64(i%1000) / 7)
				i++
			}
		})
	})
	b.Run("client_golang", func(b *testing.B) {
		s := prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "x",
			Objectives: map[float64]float64{0.5: 0.05, 0.75: 0.025, 0.95: 0.01, 0.98: 0.005, 0.99: 0.001, 0.999: 0.0001},
			MaxAge:     5 * time.Minute, AgeBuckets: 5}, []string{"request"}).WithLabelValues("Produce")
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				s.Observe(float64(i%1000) / 7)
				i++
			}
		})
	})
}
