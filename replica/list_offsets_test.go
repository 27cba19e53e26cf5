package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/log/remote"
)

// A ListOffsets by timestamp that must search remote storage does not
// hold the caller (Kafka's DelayedRemoteListOffsets): ListOffsets returns
// at once, the other partition's answer waits for it, and a store that
// does not answer within the timeout makes it REQUEST_TIMED_OUT; once the
// store answers, the search finds the record in the store.
func TestListOffsetsRemoteSearchIsDelayed(t *testing.T) {
	local, err := remote.NewLocalTieredStorage(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &slowStore{LocalTieredStorage: local, release: make(chan struct{})}
	m, p, _, localStart := tieredAuxLeader(t, store)
	asks := []ListOffsetsPartition{
		{TopicPartition: p.TopicPartition, CurrentLeaderEpoch: -1, Timestamp: 0}, // the first record: in the store
		{TopicPartition: p.TopicPartition, CurrentLeaderEpoch: -1, Timestamp: -1},
	}
	got := make(chan []ListOffsetsResult, 1)
	began := time.Now()
	m.ListOffsets(asks, 0, -1, 300*time.Millisecond, func(r []ListOffsetsResult) { got <- r })
	if d := time.Since(began); d > 100*time.Millisecond {
		t.Fatalf("ListOffsets held its caller %v while the store was stalled", d)
	}
	var r []ListOffsetsResult
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer 10 s after a 300 ms timeout")
	}
	if !errors.Is(r[0].Err, kerr.RequestTimedOut) {
		t.Errorf("the stalled search answered %+v, want REQUEST_TIMED_OUT", r[0])
	}
	if r[1].Err != nil || r[1].Offset != p.Log.HighWatermark() {
		t.Errorf("latest answered %+v, want the high watermark %d", r[1], p.Log.HighWatermark())
	}
	if d := time.Since(began); d < 300*time.Millisecond {
		t.Errorf("answered after %v, before the timeout", d)
	}

	close(store.release)
	m.ListOffsets(asks[:1], 0, -1, 10*time.Second, func(r []ListOffsetsResult) { got <- r })
	r = <-got
	if r[0].Err != nil || r[0].Offset != 0 || localStart <= 0 {
		t.Fatalf("the search in the store answered %+v (local log start %d), want offset 0", r[0], localStart)
	}
	// Earliest pending upload (KIP-1023): the offset after the highest
	// in the store.
	to, err := m.ListOffset(p.TopicPartition, -1, -6, 0, -1)
	if want := p.Log.HighestOffsetInRemoteStorage() + 1; err != nil || to.Offset != want {
		t.Fatalf("earliest pending upload %+v, %v; want %d", to, err, want)
	}
}
