package main

import (
	"math"
	"math/bits"
	"time"
)

// histogram is a log-linear latency histogram in the style of HdrHistogram:
// values below 2^histSubBits are counted exactly; above that, every power of
// two [2^k, 2^(k+1)) is split into 2^histSubBits equal sub-buckets, so a
// bucket is never wider than 1/128 of the values it holds. Quantile reports
// the middle of the bucket the quantile falls in, clamped to the exact
// minimum and maximum, so its relative error is below 0.4%.
//
// It has a fixed size (histBuckets counters, about 59 KB) whatever the number
// of samples, and covers every non-negative int64. It is not safe for
// concurrent use; latencyRecorder adds the lock.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    float64
	min    int64
	max    int64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // linear sub-buckets per power of two
	// Values < histSub take one bucket each; each power of two from
	// 2^histSubBits to 2^62 takes histSub more.
	histBuckets = histSub + (63-histSubBits)*histSub
)

// histIndex is the bucket holding v (v >= 0).
func histIndex(v int64) int {
	if v < histSub {
		return int(v)
	}
	k := bits.Len64(uint64(v)) - 1 // 2^k <= v < 2^(k+1), k >= histSubBits
	shift := k - histSubBits
	sub := int(v>>shift) - histSub // 0..histSub-1
	return histSub + shift*histSub + sub
}

// histBounds is the range [lo, hi] of values that fall in bucket i.
func histBounds(i int) (lo, hi int64) {
	if i < histSub {
		return int64(i), int64(i)
	}
	shift := (i - histSub) / histSub
	sub := (i - histSub) % histSub
	lo = int64(histSub+sub) << shift
	hi = lo + (int64(1) << shift) - 1
	return lo, hi
}

// Record adds one sample; negative samples count as 0.
func (h *histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// RecordDuration adds one sample of d in nanoseconds.
func (h *histogram) RecordDuration(d time.Duration) { h.Record(int64(d)) }

// Merge adds every sample of o to h.
func (h *histogram) Merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Reset empties h.
func (h *histogram) Reset() { *h = histogram{} }

// Count is the number of samples.
func (h *histogram) Count() uint64 { return h.n }

// Max is the largest sample, exactly; 0 when empty.
func (h *histogram) Max() int64 { return h.max }

// Min is the smallest sample, exactly; 0 when empty.
func (h *histogram) Min() int64 { return h.min }

// Mean is the exact mean; 0 when empty.
func (h *histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile is the value below or at which a fraction q (0..1) of samples
// fall: the sample of rank ceil(q*n) (at least 1) in sorted order, to within
// the bucket's width. Quantile(1) is Max; an empty histogram gives 0.
func (h *histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	if q >= 1 {
		return h.max
	}
	if q <= 0 {
		return h.min
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			lo, hi := histBounds(i)
			v := lo + (hi-lo)/2
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}
