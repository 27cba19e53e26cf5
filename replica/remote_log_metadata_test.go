package replica

import (
	"context"
	"testing"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
	"github.com/moldau/moldau/log/remote"
)

// Events written through the topic-based manager are in
// __remote_log_metadata, partitioned as Kafka's, applied when the write
// returns, and a new manager on the same logs (a restart) rebuilds the
// same store from the topic.
func TestTopicBasedRemoteLogMetadataManager(t *testing.T) {
	m, tm := newTestManager(t)
	created := 0
	newRLMM := func() *TopicBasedRemoteLogMetadataManager {
		return NewTopicBasedRemoteLogMetadataManager(TopicBasedRemoteLogMetadataManagerConfig{
			BrokerID: 1, Replicas: m, Image: func() *metadata.Image { return tm.image },
			NumPartitions: 5, Logger: slogDiscard(),
			CreateTopic: func(context.Context) error {
				created++
				tm.CreateTopic(RemoteLogMetadataTopic, 5)
				return nil
			},
		})
	}
	rlmm := newRLMM()
	ctx := context.Background()
	tp := remote.TopicIdPartition{TopicID: uuid.Random(), Topic: "tiered", Partition: 3}
	if segs, err := rlmm.ListRemoteLogSegments(tp); err != nil || len(segs) != 0 {
		t.Fatalf("before any write: %v, %v", segs, err)
	}
	var ids []remote.RemoteLogSegmentId
	for i := range 3 {
		id := remote.RemoteLogSegmentId{TopicIdPartition: tp, ID: uuid.Random()}
		ids = append(ids, id)
		s := &remote.RemoteLogSegmentMetadata{ID: id, StartOffset: int64(i * 100), EndOffset: int64(i*100 + 99), BrokerID: 1,
			SegmentLeaderEpochs: map[int32]int64{0: int64(i * 100)}, SegmentSizeInBytes: 1000, State: remote.CopySegmentStarted}
		if err := rlmm.AddRemoteLogSegmentMetadata(ctx, s); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if err := rlmm.UpdateRemoteLogSegmentMetadata(ctx, remote.RemoteLogSegmentMetadataUpdate{ID: id, State: remote.CopySegmentFinished, BrokerID: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if created != 1 {
		t.Fatalf("topic created %d times", created)
	}
	if err := rlmm.UpdateRemoteLogSegmentMetadata(ctx, remote.RemoteLogSegmentMetadataUpdate{ID: ids[0], State: remote.CopySegmentStarted}); err == nil {
		t.Fatal("an update back to COPY_SEGMENT_STARTED was accepted")
	}
	check := func(r *TopicBasedRemoteLogMetadataManager) {
		t.Helper()
		segs, err := r.ListRemoteLogSegments(tp)
		if err != nil || len(segs) != 3 {
			t.Fatalf("segments %v, %v", segs, err)
		}
		want := []remote.RemoteLogSegmentState{remote.CopySegmentFinished, remote.CopySegmentFinished, remote.CopySegmentStarted}
		for i, s := range segs {
			if s.ID != ids[i] || s.State != want[i] {
				t.Fatalf("segment %d: %s %s, want %s %s", i, s.ID, s.State, ids[i], want[i])
			}
		}
		// By epoch and offset: only finished copies.
		if s, ok, err := r.RemoteLogSegmentMetadata(tp, 0, 150); err != nil || !ok || s.ID != ids[1] {
			t.Fatalf("segment of epoch 0 offset 150: %v, %v, %v", s, ok, err)
		}
		for _, q := range []struct {
			epoch  int32
			offset int64
		}{{0, 250}, {1, 50}} {
			if s, ok, err := r.RemoteLogSegmentMetadata(tp, q.epoch, q.offset); err != nil || ok {
				t.Fatalf("segment of epoch %d offset %d: %v, %v, %v", q.epoch, q.offset, s, ok, err)
			}
		}
	}
	check(rlmm)
	// Every event is in the metadata partition the partitioner names.
	mp := remote.MetadataPartition(tp, 5)
	for i := range int32(5) {
		p := m.Partition(TopicPartition{Topic: RemoteLogMetadataTopic, Partition: i})
		if n := p.Log.LogEndOffset(); (i == mp) != (n == 5) || i != mp && n != 0 {
			t.Fatalf("metadata partition %d holds %d events (events go to %d)", i, n, mp)
		}
	}
	// A restart: a new manager reads the topic back.
	check(newRLMM())
	// The background catch-up rebuilds it too, before any read.
	other := newRLMM()
	other.CatchUpAll()
	check(other)
}
