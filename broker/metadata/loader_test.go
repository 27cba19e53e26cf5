package metadata

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
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
