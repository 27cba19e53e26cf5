package replica

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

// The leader's high watermark does not move while the committed ISR is
// smaller than min.insync.replicas (Kafka 4's maybeIncrementLeaderHW, which
// KIP-966's eligible leader replicas rely on), even for acks=1 records and
// a follower that has them; acks=all is refused before the append; an ISR
// back at min.insync.replicas moves it. min.insync.replicas counts at most
// the replicas there are (a single replica meets 2).
func TestHighWatermarkWaitsForMinISR(t *testing.T) {
	tm := newMinISR2Manager(t, nil)
	m := tm.m
	id := uuid.Random()
	tm.apply(&metadata.TopicRecord{Name: "t", TopicID: id},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1},
		&metadata.PartitionRecord{PartitionID: 1, TopicID: id, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	produce := func(part int32, acks int16) error {
		done := make(chan []ProduceResult, 1)
		m.AppendRecords(time.Second, acks, []ProduceEntry{{TopicPartition: TopicPartition{Topic: "t", Partition: part}, Records: batch(5, 10)}},
			func(r []ProduceResult) { done <- r })
		return (<-done)[0].Err
	}
	if err := produce(0, -1); errCode(err) != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all below min.insync.replicas: %v", err)
	}
	if err := produce(0, 1); err != nil {
		t.Fatal(err)
	}
	p := m.Partition(TopicPartition{Topic: "t", Partition: 0})
	// Follower 2 has everything, yet the ISR is {1}: nothing committed.
	m.updateFollowerFetchState(p, 2, -1, 5, 0, 5)
	if hw := p.Log.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d with the ISR below min.insync.replicas", hw)
	}
	// The controller commits {1,2}: the high watermark moves.
	tm.apply(&metadata.PartitionChangeRecord{PartitionID: 0, TopicID: id, ISR: []int32{1, 2}, Leader: metadata.NoLeaderChange, LeaderRecoveryState: -1})
	m.updateFollowerFetchState(p, 2, -1, 5, 0, 5)
	if hw := p.Log.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d with the ISR at min.insync.replicas, want 5", hw)
	}
	// One replica: min.insync.replicas 2 is met by it.
	if err := produce(1, -1); err != nil {
		t.Fatalf("acks=all on a single replica with min.insync.replicas 2: %v", err)
	}
}

// An acks=all append whose broker stops leading the partition before the
// high watermark is checked is not acknowledged, even when the high
// watermark already covers it on this broker: its records may be on no
// other replica, and the new leader's log is the partition's. (A controlled
// shutdown moves leaderships away under produce traffic; dropping this
// error acknowledged records the next leader never had.)
func TestAcksAllRefusedWhenLeadershipMovesAfterAppend(t *testing.T) {
	m, tm := newTestManager(t)
	id := uuid.Random()
	tm.apply(&metadata.TopicRecord{Name: "t", TopicID: id},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1})
	produce := func() error {
		done := make(chan []ProduceResult, 1)
		m.AppendRecords(time.Second, -1, []ProduceEntry{{TopicPartition: TopicPartition{Topic: "t", Partition: 0}, Records: batch(5, 10)}},
			func(r []ProduceResult) { done <- r })
		return (<-done)[0].Err
	}
	if err := produce(); err != nil {
		t.Fatalf("acks=all with the leader alone in the ISR: %v", err)
	}
	m.afterLocalAppend = func() {
		tm.apply(&metadata.PartitionChangeRecord{PartitionID: 0, TopicID: id, Leader: 2, ISR: []int32{2}, LeaderRecoveryState: -1})
	}
	if err := produce(); errCode(err) != kerr.NotLeaderForPartition.Code {
		t.Fatalf("acks=all append whose leadership moved before its check: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
}
