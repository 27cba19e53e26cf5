package memory

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCFloorPercent(t *testing.T) {
	g := &GCFloor{floor: 64 << 20, base: 100}
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},          // nothing known yet
		{32 << 20, 100},   // 2x live reaches the floor
		{40 << 20, 100},   // above
		{16 << 20, 300},   // 4x live is the floor
		{20 << 20, 220},   // 3.2x: rounded up to 10%
		{1 << 20, 900},    // capped at 10x live
		{6400 << 10, 900}, // 10x exactly
	} {
		if got := g.percentFor(c.live); got != c.want {
			t.Errorf("live %d: GOGC %d, want %d", c.live, got, c.want)
		}
	}
	// A base above what the floor needs is kept.
	g = &GCFloor{floor: 64 << 20, base: 400}
	if got := g.percentFor(16 << 20); got != 400 {
		t.Errorf("base 400, live 16 MiB: GOGC %d, want 400", got)
	}
}

// TestGCFloorRaisesGOGCForASmallHeap: with a floor far above this test's
// live heap, collections leave GOGC raised; Stop restores it.
func TestGCFloorRaisesGOGCForASmallHeap(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	g := StartGCFloor(1 << 30)
	defer g.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for g.GCPercent() != maxGCPercent {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d after collections, want %d", g.GCPercent(), maxGCPercent)
		}
		runtime.GC()
		time.Sleep(time.Millisecond) // the finalizer runs on its own goroutine
	}
	if got := debug.SetGCPercent(maxGCPercent); got != maxGCPercent {
		t.Fatalf("runtime GOGC %d, want %d", got, maxGCPercent)
	}
	g.Stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC after Stop %d, want 100", got)
	}
	// No tuning after Stop.
	runtime.GC()
	runtime.GC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC changed after Stop: %d", got)
	}
	if StartGCFloor(0) != nil {
		t.Fatal("a zero floor started a tuner")
	}
}
