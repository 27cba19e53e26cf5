package memory

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestGCFloorPercent(t *testing.T) {
	g := &GCFloor{floor: 64 << 20, base: 100}
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 6300},         // before the first collection: taken as 1 MiB
		{512 << 10, 6300}, // at least 1 MiB
		{1 << 20, 6300},   // 64x live is the floor
		{32 << 20, 100},   // 2x live reaches the floor
		{40 << 20, 100},   // above
		{16 << 20, 300},   // 4x live is the floor
		{20 << 20, 220},   // 3.2x
		{30 << 20, 120},   // 2.13x: rounded up to a step of 10
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
	// This test process's live heap is far below 100 MiB, so the goal
	// of a 1 GiB floor needs GOGC above 1000 from the start.
	if p := g.GCPercent(); p < 1000 {
		t.Fatalf("GOGC %d at the start, want above 1000", p)
	}
	// It is the runtime's GOGC, and collections keep it so.
	for range 3 {
		runtime.GC()
	}
	p := g.GCPercent()
	if got := debug.SetGCPercent(p); got != p || p < 1000 {
		t.Fatalf("runtime GOGC %d, tuner's %d, want the same and above 1000", got, p)
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
