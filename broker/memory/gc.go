package memory

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// GCFloor keeps the garbage collector's heap goal at or above a floor of
// bytes while the live heap is small, as a minimum heap size would: with
// Go's default GOGC of 100 a broker whose live heap is a few MB collects
// every few MB allocated, and a burst of work (creating 10,000 partitions
// grows the live heap from 3 to 30 MB in a second) then runs a dozen
// collections back to back, each adding milliseconds to the requests in
// flight. Above the floor the collector works as with GOGC (the value in
// effect when GCFloor started); GOMEMLIMIT still bounds the heap.
//
// After every collection it sets GOGC so that the next goal is the larger
// of floor and live*(1+GOGC/100) (live being the heap that survived the
// collection, runtime/metrics' /gc/heap/live:bytes, taken as at least
// 1 MiB, so also before the first collection). It runs in the finalizer
// of an object it allocates anew each cycle, as uber-go's GC tuner does.
// Stop restores GOGC.
type GCFloor struct {
	floor   uint64
	base    int // GOGC when started
	stopped atomic.Bool
	mu      sync.Mutex // serialises tune and Stop
	percent int
	sample  []metrics.Sample
}

// minLive is the smallest live heap GCFloor assumes: with 1 MiB and a
// floor of 128 MiB it sets GOGC to at most 12,700.
const minLive = 1 << 20

// StartGCFloor starts a GCFloor of floor bytes. It does nothing (returns
// nil) when floor is not positive or GOGC is off.
func StartGCFloor(floor int64) *GCFloor {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if floor <= 0 || base < 0 {
		return nil
	}
	g := &GCFloor{floor: uint64(floor), base: base, percent: base,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	g.tune()
	g.arm()
	return g
}

type gcSentinel struct{ _ *int } // a pointer, so it is not a tiny allocation

// arm allocates an object whose finalizer runs after the next collection.
func (g *GCFloor) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		if g.stopped.Load() {
			return
		}
		g.tune()
		g.arm()
	})
}

// tune sets GOGC for the live heap now.
func (g *GCFloor) tune() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped.Load() {
		return
	}
	metrics.Read(g.sample)
	var live uint64
	if g.sample[0].Value.Kind() == metrics.KindUint64 {
		live = g.sample[0].Value.Uint64()
	}
	p := g.percentFor(live)
	if p != g.percent {
		debug.SetGCPercent(p)
		g.percent = p
	}
}

// percentFor is the GOGC that puts the goal at the floor, for a live
// heap of live bytes.
func (g *GCFloor) percentFor(live uint64) int {
	live = max(live, minLive)
	if live*uint64(100+g.base)/100 >= g.floor {
		return g.base
	}
	p := int(g.floor*100/live) - 100
	// Round to a step of 10%, so that small changes of the live heap
	// do not reset the pacer every cycle.
	p = (p + 9) / 10 * 10
	return max(p, g.base)
}

// Stop stops tuning and restores GOGC. Nil-safe.
func (g *GCFloor) Stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped.Swap(true) {
		return
	}
	debug.SetGCPercent(g.base)
}

// GCPercent is the GOGC it set last.
func (g *GCFloor) GCPercent() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.percent
}
