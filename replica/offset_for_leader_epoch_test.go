package replica

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
)

// LastOffsetForLeaderEpoch answers from the epochs the appends wrote,
// fences old and unknown current leader epochs, and answers only where the
// partition is led here.
func TestLastOffsetForLeaderEpoch(t *testing.T) {
	m, store := newTestManager(t)
	store.CreateTopic("t", 1)
	tp := TopicPartition{Topic: "t", Partition: 0}
	bump := func(leader int32) {
		r := metadata.NewPartitionChangeRecord(store.ids["t"], 0)
		r.Leader = leader
		store.apply(r)
	}
	produceSync(t, m, tp, batch(3, 10)) // epoch 0: 0-2
	bump(1)
	bump(1)
	produceSync(t, m, tp, batch(2, 10)) // epoch 2: 3-4
	bump(1)
	produceSync(t, m, tp, batch(1, 10)) // epoch 3: 5
	if got := m.Partition(tp).LeaderEpoch(); got != 3 {
		t.Fatalf("leader epoch %d, want 3", got)
	}

	for _, tc := range []struct {
		current, requested int32
		epoch              int32
		end                int64
		err                error
	}{
		{-1, 0, 0, 3, nil},
		{3, 0, 0, 3, nil},
		{3, 1, 0, 3, nil},
		{3, 2, 2, 5, nil},
		{3, 3, 3, 6, nil},
		{-1, 4, -1, -1, nil},
		{-1, -1, -1, -1, nil},
		{2, 2, -1, -1, kerr.FencedLeaderEpoch},
		{4, 2, -1, -1, kerr.UnknownLeaderEpoch},
	} {
		e, o, err := m.LastOffsetForLeaderEpoch(tp, tc.current, tc.requested)
		if errCode(err) != errCode(tc.err) || e != tc.epoch || o != tc.end {
			t.Errorf("current %d, epoch %d: %d %d %v, want %d %d %v", tc.current, tc.requested, e, o, err, tc.epoch, tc.end, tc.err)
		}
	}

	if _, _, err := m.LastOffsetForLeaderEpoch(TopicPartition{Topic: "t", Partition: 1}, -1, 0); errCode(err) != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("missing partition: %v", err)
	}
	if _, _, err := m.LastOffsetForLeaderEpoch(TopicPartition{Topic: "nope", Partition: 0}, -1, 0); errCode(err) != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("missing topic: %v", err)
	}
	bump(2) // led elsewhere now
	if _, _, err := m.LastOffsetForLeaderEpoch(tp, -1, 0); errCode(err) != kerr.NotLeaderForPartition.Code {
		t.Errorf("not the leader: %v", err)
	}
}
