package metadata

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moldau/moldau/broker/uuid"
)

// slowPublisher takes its time with each update, as the replica manager
// creating logs or the dynamic-config publisher does, and records how many
// updates it has finished.
type slowPublisher struct {
	entered chan struct{}
	release chan struct{}
	done    atomic.Int32
}

func (*slowPublisher) Name() string { return "slow" }

func (p *slowPublisher) OnMetadataUpdate(d *Delta, im *Image) {
	if im.Offset > 0 {
		close(p.entered)
		<-p.release
	}
	p.done.Add(1)
}

// TestWaitForWaitsForPublishers: a request that waits until the metadata
// shows its change must also see what the publishers did with it (a
// dynamic broker config installed, a log created), so WaitFor returns only
// once every publisher has had the image.
func TestWaitForWaitsForPublishers(t *testing.T) {
	l := NewLoader(nil)
	p := &slowPublisher{entered: make(chan struct{}), release: make(chan struct{})}
	if err := l.InstallPublisher(p); err != nil {
		t.Fatal(err)
	}
	v := "1234"
	committed := make(chan error, 1)
	go func() {
		committed <- l.HandleCommit(1, 1, [][]byte{Encode(&ConfigRecord{ResourceType: BrokerResource, Name: "log.retention.ms", Value: &v})})
	}()
	<-p.entered // the image is built; the publisher is still at work

	cond := func(im *Image) bool { return im.BrokerConfigs("")["log.retention.ms"] == "1234" }
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.WaitFor(ctx, cond); err == nil {
		t.Fatalf("WaitFor returned while the publisher was still applying the update (%d done)", p.done.Load())
	}

	waited := make(chan error, 1)
	go func() { waited <- l.WaitFor(context.Background(), cond) }()
	close(p.release)
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if p.done.Load() != 2 {
		t.Fatalf("publisher finished %d updates, want 2", p.done.Load())
	}
}

// recordingPublisher keeps every delta it is given.
type recordingPublisher struct {
	deltas []*Delta
	images []*Image
}

func (*recordingPublisher) Name() string { return "recording" }

func (p *recordingPublisher) OnMetadataUpdate(d *Delta, im *Image) {
	p.deltas = append(p.deltas, d)
	p.images = append(p.images, im)
}

func commitRecords(t *testing.T, l *Loader, offset int64, recs ...Record) {
	t.Helper()
	raw := make([][]byte, len(recs))
	for i, r := range recs {
		raw[i] = Encode(r)
	}
	if err := l.HandleCommit(offset, 1, raw); err != nil {
		t.Fatal(err)
	}
}

// TestCatchUpPublishesThePresentOnly replays what a restart replays for a
// topic deleted and created again under the same name: held until caught
// up, the publishers never see the old topic, only the new one, in one
// delta; published batch by batch (the defect this guards against) they
// would be told to create the old topic's log first.
func TestCatchUpPublishesThePresentOnly(t *testing.T) {
	oldID, newID := uuid.Random(), uuid.Random()
	l := NewLoader(nil)
	p := &recordingPublisher{}
	if err := l.InstallPublisher(p); err != nil {
		t.Fatal(err)
	}
	l.HoldUntilCaughtUp()
	commitRecords(t, l, 0,
		&TopicRecord{Name: "again", TopicID: oldID},
		&PartitionRecord{PartitionID: 0, TopicID: oldID, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	commitRecords(t, l, 1, &RemoveTopicRecord{TopicID: oldID})
	commitRecords(t, l, 2,
		&TopicRecord{Name: "again", TopicID: newID},
		&PartitionRecord{PartitionID: 0, TopicID: newID, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})

	if len(p.deltas) != 1 || l.Image() != Empty {
		t.Fatalf("published while catching up: %d updates, image at offset %d", len(p.deltas), l.Image().Offset)
	}
	if l.CaughtUpTo(4) {
		t.Fatal("caught up below the high watermark")
	}
	if !l.CaughtUpTo(3) || l.CatchingUp() {
		t.Fatal("not caught up at the high watermark")
	}
	if len(p.deltas) != 2 {
		t.Fatalf("%d updates after catching up, want 2 (install, catch-up)", len(p.deltas))
	}
	d, im := p.deltas[1], p.images[1]
	if im.Offset != 2 || l.Image() != im {
		t.Fatalf("published image at offset %d", im.Offset)
	}
	created := d.CreatedTopics()
	if len(created) != 1 || created[0].ID != newID || len(d.DeletedTopics()) != 0 {
		t.Fatalf("delta creates %v, deletes %v; want only the new topic", created, d.DeletedTopics())
	}
	for tp := range d.ChangedPartitions() {
		if tp.ID != newID {
			t.Fatalf("delta changes partitions of topic %v", tp.ID)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.WaitForOffset(ctx, 2); err != nil {
		t.Fatal(err)
	}

	// From now on every batch is published as it comes.
	commitRecords(t, l, 3, &RemoveTopicRecord{TopicID: newID})
	if len(p.deltas) != 3 || len(p.deltas[2].DeletedTopics()) != 1 {
		t.Fatalf("after catching up a batch was not published: %d updates", len(p.deltas))
	}
}

// TestCatchUpAfterSnapshot: a snapshot loaded while catching up is part of
// the one delta, and a publisher that had seen an older image gets the
// difference (the topic the snapshot lacks deleted).
func TestCatchUpAfterSnapshot(t *testing.T) {
	gone, kept := uuid.Random(), uuid.Random()
	l := NewLoader(nil)
	p := &recordingPublisher{}
	if err := l.InstallPublisher(p); err != nil {
		t.Fatal(err)
	}
	commitRecords(t, l, 0, &TopicRecord{Name: "gone", TopicID: gone},
		&PartitionRecord{PartitionID: 0, TopicID: gone, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	l.HoldUntilCaughtUp()
	snap := [][]byte{Encode(&TopicRecord{Name: "kept", TopicID: kept}),
		Encode(&PartitionRecord{PartitionID: 0, TopicID: kept, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})}
	if err := l.HandleSnapshot(9, 1, snap); err != nil {
		t.Fatal(err)
	}
	if len(p.deltas) != 2 || !l.CaughtUpTo(10) {
		t.Fatalf("%d updates before catching up; caught up %v", len(p.deltas), !l.CatchingUp())
	}
	d := p.deltas[2]
	if del := d.DeletedTopics(); len(del) != 1 || del[0].ID != gone {
		t.Fatalf("deleted %v, want the topic the snapshot lacks", del)
	}
	if _, ok := p.images[2].Topic("kept"); !ok {
		t.Fatal("the snapshot's topic is missing")
	}
}
