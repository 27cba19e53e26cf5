package share

import (
	"sync"
	"testing"
	"time"

	"github.com/moldau/moldau/coordinator/runtime/runtimetest"
)

// A key whose last snapshot is older than the interval is snapshotted
// again at the next snapshot epoch with the same state; once every key's
// snapshot is such a rewrite nothing more is written, until a write warms
// one up.
func TestColdPartitionSnapshots(t *testing.T) {
	var mu sync.Mutex
	clock := time.UnixMilli(1_000_000)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	cfg := DefaultConfig()
	cfg.ColdPartitionSnapshotInterval = time.Hour // the timer never fires here: the test runs the job
	cfg.SnapshotUpdateRecordsPerSnapshot = 100
	l := runtimetest.NewMemLog()
	s := NewService(Options{Config: cfg, Log: l, NumPartitions: func() int32 { return 1 }, Now: now})
	t.Cleanup(s.Close)
	ts := &testService{Service: s, t: t, log: l, parts: 1}
	ts.elect()
	cold := func() int {
		n, err := wait(t, func(done func(int, error)) { runColdSnapshots(s, 0, done) })
		must(t, err)
		return n
	}
	ka, kb := Key{GroupID: "a", TopicID: topicA}, Key{GroupID: "b", TopicID: topicA}
	must(t, ts.initialize(ka, 1, 0))
	must(t, ts.initialize(kb, 1, 0))
	must(t, ts.write(ka, PartitionState{StateEpoch: 1, LeaderEpoch: 0, StartOffset: -1, DeliveryCompleteCount: 3,
		Batches: []StateBatch{b(0, 9, DeliveryAcknowledged, 1)}}))
	before := ts.states()
	if n := cold(); n != 0 {
		t.Fatalf("%d snapshots of warm keys", n)
	}
	advance(time.Hour)
	if n := cold(); n != 2 {
		t.Fatalf("%d cold snapshots, want 2", n)
	}
	after := ts.states()
	for _, k := range []Key{ka, kb} {
		x, y := before[k], after[k]
		if y.SnapshotEpoch != x.SnapshotEpoch+1 || y.WriteTimestamp != now().UnixMilli() || y.CreateTimestamp != x.CreateTimestamp {
			t.Fatalf("%v: %+v after %+v", k, y, x)
		}
		y.SnapshotEpoch, y.WriteTimestamp = x.SnapshotEpoch, x.WriteTimestamp
		if !equalValues(x, y) {
			t.Fatalf("%v: the state changed: %+v, was %+v", k, y, x)
		}
	}
	advance(time.Hour)
	if n := cold(); n != 0 {
		t.Fatalf("%d snapshots of a quiet partition", n)
	}
	must(t, ts.initialize(ka, 2, 5)) // a is warm again: b goes cold once more
	advance(time.Hour)
	if n := cold(); n != 2 {
		t.Fatalf("%d cold snapshots after a write, want 2", n)
	}
}

func equalValues(x, y shareValue) bool {
	if len(x.Batches) != len(y.Batches) {
		return false
	}
	for i := range x.Batches {
		if x.Batches[i] != y.Batches[i] {
			return false
		}
	}
	x.Batches, y.Batches = nil, nil
	return x.SnapshotEpoch == y.SnapshotEpoch && x.StateEpoch == y.StateEpoch && x.LeaderEpoch == y.LeaderEpoch &&
		x.StartOffset == y.StartOffset && x.DeliveryCompleteCount == y.DeliveryCompleteCount &&
		x.CreateTimestamp == y.CreateTimestamp && x.WriteTimestamp == y.WriteTimestamp
}
