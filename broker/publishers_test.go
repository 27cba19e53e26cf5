package broker

import (
	"fmt"
	"slices"
	"testing"

	"github.com/moldau/moldau/broker/metadata"
	"github.com/moldau/moldau/broker/uuid"
)

func TestCoordinatorPublisher(t *testing.T) {
	var events []string
	p := &coordinatorPublisher{name: "test", topic: metadata.ConsumerOffsetsTopic, nodeID: 1,
		onElection:    func(part, epoch int32) { events = append(events, fmt.Sprintf("elect %d@%d", part, epoch)) },
		onResignation: func(part, epoch int32) { events = append(events, fmt.Sprintf("resign %d@%d", part, epoch)) },
	}
	im := metadata.Empty
	apply := func(recs ...metadata.Record) {
		d := metadata.NewDelta(im)
		for _, r := range recs {
			if err := d.Replay(r); err != nil {
				t.Fatal(err)
			}
		}
		im = d.Apply()
		p.OnMetadataUpdate(d, im)
	}
	id, other := uuid.Random(), uuid.Random()
	apply(&metadata.TopicRecord{Name: metadata.ConsumerOffsetsTopic, TopicID: id},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&metadata.PartitionRecord{PartitionID: 1, TopicID: id, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2},
		&metadata.TopicRecord{Name: "orders", TopicID: other},
		&metadata.PartitionRecord{PartitionID: 0, TopicID: other, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	leaderless := metadata.NewPartitionChangeRecord(id, 0)
	leaderless.Leader = metadata.NoLeader
	apply(leaderless)
	back := metadata.NewPartitionChangeRecord(id, 0)
	back.Leader = 1
	moved := metadata.NewPartitionChangeRecord(id, 1)
	moved.Leader = 1
	apply(back, moved)
	apply(&metadata.RemoveTopicRecord{TopicID: id})
	want := []string{"elect 0@0", "resign 0@1", "elect 0@2", "elect 1@1", "resign 0@-1", "resign 1@-1"}
	slices.Sort(events[2:4])
	if !slices.Equal(events, want) {
		t.Fatalf("events %v\nwant   %v", events, want)
	}
}
