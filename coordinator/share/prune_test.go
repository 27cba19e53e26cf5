package share

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moldau/moldau/coordinator/runtime/runtimetest"
)

// The prune job deletes the records before the least offset of the keys'
// latest snapshots, never going back, and a deleted key holds nothing
// back.
func TestPruneBelowOldestLatestSnapshot(t *testing.T) {
	var mu sync.Mutex
	var deleted []int64
	cfg := DefaultConfig()
	cfg.SnapshotUpdateRecordsPerSnapshot = 0 // every write is a snapshot
	cfg.PruneInterval = time.Millisecond
	s := NewService(Options{Config: cfg, Log: runtimetest.NewMemLog(), NumPartitions: func() int32 { return 1 },
		DeleteRecords: func(p int32, before int64) error {
			mu.Lock()
			deleted = append(deleted, before)
			mu.Unlock()
			return nil
		}})
	t.Cleanup(s.Close)
	ts := &testService{Service: s, t: t, parts: 1}
	ts.elect()
	last := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		if len(deleted) == 0 {
			return 0
		}
		return deleted[len(deleted)-1]
	}
	waitPruned := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for last() != want {
			if time.Now().After(deadline) {
				t.Fatalf("pruned before %d, want %d", last(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	a, b := Key{GroupID: "a", TopicID: topicA}, Key{GroupID: "b", TopicID: topicA}
	w := func(k Key) {
		t.Helper()
		must(t, ts.write(k, PartitionState{StateEpoch: -1, LeaderEpoch: -1, StartOffset: -1, DeliveryCompleteCount: -1}))
	}
	must(t, ts.initialize(a, 0, 0)) // offset 0
	must(t, ts.initialize(b, 0, 0)) // 1
	w(a)                            // 2
	w(a)                            // 3: a's latest snapshot; b's is at 1
	waitPruned(1)
	w(b) // 4
	waitPruned(3)
	must(t, ts.remove(b)) // 5: b no longer counts
	w(a)                  // 6
	waitPruned(6)
	mu.Lock()
	defer mu.Unlock()
	if !slices.IsSorted(deleted) {
		t.Fatalf("prunes went back: %v", deleted)
	}
	for i := 1; i < len(deleted); i++ {
		if deleted[i] == deleted[i-1] {
			t.Fatalf("the same prune twice: %v", deleted)
		}
	}
}
