package summary

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	subBits = 4
	sub     = 1 << subBits // linear buckets per power of two
	maxBits = 36           // values from 2^maxBits units share the last power of two
	// Values below sub take one bucket each; each power of two from
	// 2^subBits to 2^(maxBits-1) takes sub more.
	numBuckets = sub + (maxBits-subBits)*sub
)

// bucketOf is the bucket holding v (v >= 0, in units).
func bucketOf(v uint64) int {
	if v < sub {
		return int(v)
	}
	k := bits.Len64(v) - 1 // 2^k <= v < 2^(k+1), k >= subBits
	if k >= maxBits {
		return numBuckets - 1
	}
	shift := k - subBits
	return sub + shift*sub + int(v>>shift) - sub
}

// bucketMid is the middle of bucket i's values, in units.
func bucketMid(i int) float64 {
	if i < sub {
		return float64(i)
	}
	shift := (i - sub) / sub
	lo := uint64(sub+(i-sub)%sub) << shift
	width := uint64(1) << shift
	return float64(lo) + float64(width-1)/2
}

// Opts configure a Vec.
type Opts struct {
	Name, Help string
	// Objectives are the quantiles reported (0 < q < 1).
	Objectives []float64
	// Unit is the smallest difference between values that the
	// quantiles keep apart (e.g. 0.001 for times in ms to the µs).
	Unit float64
	// MaxAge is the window the quantiles cover, in AgeBuckets slices
	// (client_golang's defaults: 10 minutes, 5).
	MaxAge     time.Duration
	AgeBuckets int
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// Vec is a summary partitioned by labels, a prometheus.Collector.
type Vec struct {
	opts  Opts
	desc  *prometheus.Desc
	slice time.Duration
	mu    sync.Mutex // guards children and the clearing of slices
	kids  map[string]*Summary
	order []*Summary
}

// NewVec returns a Vec with the given variable labels.
func NewVec(opts Opts, labels []string) *Vec {
	if opts.Unit <= 0 {
		opts.Unit = 1
	}
	if opts.AgeBuckets < 1 {
		opts.AgeBuckets = 5
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = 10 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Vec{
		opts:  opts,
		desc:  prometheus.NewDesc(opts.Name, opts.Help, labels, nil),
		slice: opts.MaxAge / time.Duration(opts.AgeBuckets),
		kids:  map[string]*Summary{},
	}
}

// WithLabelValues returns the summary for the label values (created on
// first use; keep it rather than look it up per observation).
func (v *Vec) WithLabelValues(values ...string) *Summary {
	key := labelKey(values)
	v.mu.Lock()
	defer v.mu.Unlock()
	if s := v.kids[key]; s != nil {
		return s
	}
	s := &Summary{vec: v, labels: append([]string(nil), values...), slices: make([]slice, v.opts.AgeBuckets)}
	v.kids[key] = s
	v.order = append(v.order, s)
	return s
}

func labelKey(values []string) string {
	n := 0
	for _, s := range values {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	for _, s := range values {
		b = append(b, s...)
		b = append(b, 0)
	}
	return string(b)
}

// Describe implements prometheus.Collector.
func (v *Vec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector: one summary per label values.
func (v *Vec) Collect(ch chan<- prometheus.Metric) {
	v.mu.Lock()
	kids := append([]*Summary(nil), v.order...)
	v.mu.Unlock()
	for _, s := range kids {
		count, sum, q := s.snapshot()
		ch <- prometheus.MustNewConstSummary(v.desc, count, sum, q, s.labels...)
	}
}

// Summary is one labelled summary; it implements prometheus.Observer.
type Summary struct {
	vec    *Vec
	labels []string
	count  atomic.Uint64
	sum    atomic.Uint64 // in units
	slices []slice
}

// slice is the histogram of one time slice of the window.
type slice struct {
	epoch  atomic.Int64 // which slice of time it holds (now / slice length)
	counts [numBuckets]atomic.Uint32
}

// Observe adds one value, rounded to a whole number of units (negative
// values count as 0). The sum is kept in units too.
func (s *Summary) Observe(v float64) {
	if v != v { // NaN
		return
	}
	u := uint64(0)
	if x := v/s.vec.opts.Unit + 0.5; x >= 1 {
		u = uint64(min(x, 1<<62))
	}
	s.count.Add(1)
	s.sum.Add(u)
	s.current().counts[bucketOf(u)].Add(1)
}

// current is the slice of the present moment, cleared if it held an
// older one.
func (s *Summary) current() *slice {
	epoch := s.vec.opts.Now().UnixNano() / int64(s.vec.slice)
	sl := &s.slices[int(epoch%int64(len(s.slices)))]
	if sl.epoch.Load() == epoch {
		return sl
	}
	s.vec.mu.Lock()
	if sl.epoch.Load() != epoch {
		for i := range sl.counts {
			sl.counts[i].Store(0)
		}
		sl.epoch.Store(epoch)
	}
	s.vec.mu.Unlock()
	return sl
}

// snapshot is the count and sum since the start and the quantiles over
// the window.
func (s *Summary) snapshot() (uint64, float64, map[float64]float64) {
	var merged [numBuckets]uint64
	var n uint64
	now := s.vec.opts.Now().UnixNano() / int64(s.vec.slice)
	for i := range s.slices {
		sl := &s.slices[i]
		if e := sl.epoch.Load(); e <= now-int64(len(s.slices)) || e > now {
			continue // older than the window
		}
		for j := range sl.counts {
			c := uint64(sl.counts[j].Load())
			merged[j] += c
			n += c
		}
	}
	q := make(map[float64]float64, len(s.vec.opts.Objectives))
	for _, obj := range s.vec.opts.Objectives {
		q[obj] = quantile(&merged, n, obj) * s.vec.opts.Unit
	}
	return s.count.Load(), float64(s.sum.Load()) * s.vec.opts.Unit, q
}

// quantile is the middle of the bucket holding the value of rank
// ceil(q*n), in units; NaN when there is nothing in the window.
func quantile(counts *[numBuckets]uint64, n uint64, q float64) float64 {
	if n == 0 {
		return math.NaN()
	}
	rank := max(uint64(math.Ceil(q*float64(n))), 1)
	var cum uint64
	for i, c := range counts {
		if cum += c; cum >= rank {
			return bucketMid(i)
		}
	}
	return bucketMid(numBuckets - 1)
}
