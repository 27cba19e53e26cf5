package share

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// b is a batch: first and last offset, delivery state, delivery count.
func b(first, last int64, state int8, count int16) StateBatch {
	return StateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
}

func bs(batches ...StateBatch) []StateBatch { return batches }

// The merge rules of Kafka's PersisterStateBatchCombiner: the cases of its
// test (same state, different states, several batches, pruning), each
// worked out from the algorithm.
func TestCombineStateBatches(t *testing.T) {
	tests := []struct {
		name        string
		soFar, news []StateBatch
		start       int64
		want        []StateBatch
	}{
		{"both empty", nil, nil, 120, bs()},
		{"one batch, nothing to prune", bs(b(100, 110, 0, 1)), nil, -1, bs(b(100, 110, 0, 1))},
		{"current batch cut at the start offset", bs(b(100, 130, 0, 1)), nil, 120, bs(b(120, 130, 0, 1))},
		{"new batch cut at the start offset", nil, bs(b(100, 130, 0, 1)), 120, bs(b(120, 130, 0, 1))},
		{"batch before the start offset dropped", bs(b(100, 110, 0, 1)), bs(b(111, 130, 2, 1)), 115, bs(b(115, 130, 2, 1))},

		// Same delivery count and state.
		{"same: equal", bs(b(100, 110, 0, 1)), bs(b(100, 110, 0, 1)), -1, bs(b(100, 110, 0, 1))},
		{"same: same first, shorter", bs(b(100, 110, 0, 1)), bs(b(100, 105, 0, 1)), -1, bs(b(100, 110, 0, 1))},
		{"same: same first, longer", bs(b(100, 110, 0, 1)), bs(b(100, 115, 0, 1)), -1, bs(b(100, 115, 0, 1))},
		{"same: inside", bs(b(100, 110, 0, 1)), bs(b(105, 108, 0, 1)), -1, bs(b(100, 110, 0, 1))},
		{"same: same last", bs(b(100, 110, 0, 1)), bs(b(105, 110, 0, 1)), -1, bs(b(100, 110, 0, 1))},
		{"same: overlapping past the end", bs(b(100, 110, 0, 1)), bs(b(105, 115, 0, 1)), -1, bs(b(100, 115, 0, 1))},
		{"same: contiguous", bs(b(100, 110, 0, 1)), bs(b(111, 115, 0, 1)), -1, bs(b(100, 115, 0, 1))},
		{"different: contiguous stays apart", bs(b(100, 110, 0, 1)), bs(b(111, 115, 2, 1)), -1, bs(b(100, 110, 0, 1), b(111, 115, 2, 1))},
		{"disjoint in order", bs(b(200, 210, 0, 1)), bs(b(100, 110, 2, 1)), -1, bs(b(100, 110, 2, 1), b(200, 210, 0, 1))},

		// Different delivery information: the higher count, then the
		// higher state, takes the shared offsets.
		{"diff: equal span, new higher count", bs(b(100, 110, 0, 1)), bs(b(100, 110, 0, 2)), -1, bs(b(100, 110, 0, 2))},
		{"diff: equal span, new lower count", bs(b(100, 110, 0, 3)), bs(b(100, 110, 0, 1)), -1, bs(b(100, 110, 0, 3))},
		{"diff: equal span, higher state", bs(b(100, 110, 0, 1)), bs(b(100, 110, 2, 1)), -1, bs(b(100, 110, 2, 1))},
		{"diff: same first, new shorter and higher", bs(b(100, 110, 0, 1)), bs(b(100, 105, 0, 2)), -1, bs(b(100, 105, 0, 2), b(106, 110, 0, 1))},
		{"diff: same first, new shorter and lower", bs(b(100, 110, 0, 3)), bs(b(100, 105, 0, 1)), -1, bs(b(100, 110, 0, 3))},
		{"diff: same first, new longer and higher", bs(b(100, 110, 0, 1)), bs(b(100, 115, 0, 2)), -1, bs(b(100, 115, 0, 2))},
		{"diff: same first, new longer and lower", bs(b(100, 110, 0, 3)), bs(b(100, 115, 0, 1)), -1, bs(b(100, 110, 0, 3), b(111, 115, 0, 1))},
		{"diff: new inside and higher", bs(b(100, 115, 0, 1)), bs(b(105, 110, 2, 1)), -1, bs(b(100, 104, 0, 1), b(105, 110, 2, 1), b(111, 115, 0, 1))},
		{"diff: new inside and lower", bs(b(100, 115, 0, 2)), bs(b(105, 110, 2, 1)), -1, bs(b(100, 115, 0, 2))},
		{"diff: same last, new higher", bs(b(100, 115, 0, 1)), bs(b(105, 115, 2, 1)), -1, bs(b(100, 104, 0, 1), b(105, 115, 2, 1))},
		{"diff: same last, new lower", bs(b(100, 115, 0, 2)), bs(b(105, 115, 2, 1)), -1, bs(b(100, 115, 0, 2))},
		{"diff: overlap past the end, new higher", bs(b(100, 110, 0, 1)), bs(b(105, 115, 2, 1)), -1, bs(b(100, 104, 0, 1), b(105, 115, 2, 1))},
		{"diff: overlap past the end, new lower", bs(b(100, 110, 0, 2)), bs(b(105, 115, 2, 1)), -1, bs(b(100, 110, 0, 2), b(111, 115, 2, 1))},

		// Several batches.
		{"overlapping new batches with the same state",
			bs(b(100, 110, 0, 1), b(121, 130, 0, 1)), bs(b(111, 119, 2, 2), b(116, 123, 2, 2)), -1,
			bs(b(100, 110, 0, 1), b(111, 123, 2, 2), b(124, 130, 0, 1))},
		{"overlapping new batches of rising rank",
			bs(b(100, 110, 0, 1)), bs(b(101, 105, 1, 2), b(101, 115, 2, 2), b(101, 120, 3, 2)), -1,
			bs(b(100, 100, 0, 1), b(101, 120, 3, 2))},
		{"overlapping new batches, pruned",
			bs(b(100, 110, 0, 1), b(121, 130, 0, 1)), bs(b(111, 119, 2, 2), b(116, 123, 2, 2)), 120,
			bs(b(120, 123, 2, 2), b(124, 130, 0, 1))},
		{"acknowledgements inside an available batch",
			bs(b(111, 120, 0, 1)), bs(b(111, 113, 0, 2), b(114, 114, 2, 1), b(115, 119, 0, 2)), -1,
			bs(b(111, 113, 0, 2), b(114, 114, 2, 1), b(115, 119, 0, 2), b(120, 120, 0, 1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			soFar := slices.Clone(tt.soFar)
			got := combineStateBatches(soFar, tt.news, tt.start)
			if !slices.Equal(got, tt.want) {
				t.Errorf("combineStateBatches(%v, %v, %d)\n got %v\nwant %v", tt.soFar, tt.news, tt.start, got, tt.want)
			}
			if !slices.Equal(soFar, tt.soFar) {
				t.Errorf("the batches so far were changed: %v", soFar)
			}
		})
	}
}

// The result never overlaps and is in order, whatever the input.
func TestCombineStateBatchesNoOverlap(t *testing.T) {
	seed := uint64(1)
	next := func(n int64) int64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64(seed>>33) % n
	}
	for range 2000 {
		var soFar, news []StateBatch
		for range next(5) {
			f := next(50)
			soFar = append(soFar, b(f, f+next(10), int8(next(3))*2, int16(next(3))))
		}
		for range next(5) {
			f := next(50)
			news = append(news, b(f, f+next(10), int8(next(3))*2, int16(next(3))))
		}
		start := next(20) - 1
		got := combineStateBatches(soFar, news, start)
		for i, x := range got {
			if x.FirstOffset > x.LastOffset || (start >= 0 && x.FirstOffset < start) {
				t.Fatalf("%v + %v from %d: bad batch %v in %v", soFar, news, start, x, got)
			}
			if i > 0 && got[i-1].LastOffset >= x.FirstOffset {
				t.Fatalf("%v + %v from %d: overlap in %v", soFar, news, start, got)
			}
		}
	}
}

// TestCombineStateBatchesAgainstModel checks the combiner against its
// meaning on random batches, overlapping or not: every offset at or past
// the start offset takes the highest-ranked delivery information of the
// batches covering it, and the result is ordered and free of overlaps.
func TestCombineStateBatchesAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 20000; iter++ {
		gen := func() []StateBatch {
			var out []StateBatch
			n := rng.IntN(5)
			o := int64(rng.IntN(5))
			for i := 0; i < n; i++ {
				f := o + int64(rng.IntN(4))
				l := f + int64(rng.IntN(6))
				out = append(out, StateBatch{f, l, int8([]int{0, 2, 4}[rng.IntN(3)]), int16(rng.IntN(3))})
				if rng.IntN(2) == 0 {
					o = l + 1
				} else {
					o = f
				}
			}
			return out
		}
		x, y := gen(), gen()
		start := int64(rng.IntN(8)) - 1
		got := combineStateBatches(append([]StateBatch(nil), x...), append([]StateBatch(nil), y...), start)
		want := map[int64]StateBatch{}
		for _, in := range append(append([]StateBatch(nil), x...), y...) {
			for o := in.FirstOffset; o <= in.LastOffset; o++ {
				if start != -1 && o < start {
					continue
				}
				w, ok := want[o]
				if !ok || compareDeliveryInfo(in, w) > 0 {
					want[o] = in
				}
			}
		}
		have := map[int64]StateBatch{}
		prevLast := int64(-10)
		for _, g := range got {
			if g.FirstOffset <= prevLast {
				t.Fatalf("out of order or overlapping: %v + %v start %d = %v", x, y, start, got)
			}
			prevLast = g.LastOffset
			for o := g.FirstOffset; o <= g.LastOffset; o++ {
				have[o] = g
			}
		}
		for o, w := range want {
			h, ok := have[o]
			if !ok || compareDeliveryInfo(h, w) != 0 {
				t.Fatalf("offset %d: want %v have %v (%v): %v + %v start %d = %v", o, w, h, ok, x, y, start, got)
			}
		}
		for o := range have {
			if _, ok := want[o]; !ok {
				t.Fatalf("offset %d extra: %v + %v start %d = %v", o, x, y, start, got)
			}
		}
	}
}
