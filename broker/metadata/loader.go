package metadata

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Publisher receives each new image with the delta that made it (Kafka's
// MetadataPublisher). Publishers are called in order, one update at a time,
// from the loader's goroutine; an update must not block for long (the
// replica manager creating logs is the longest).
type Publisher interface {
	Name() string
	OnMetadataUpdate(delta *Delta, image *Image)
}

// Loader replays the committed metadata log into images and hands them to
// the publishers (Kafka's MetadataLoader). It is the broker side of the
// quorum's listener; the controller has its own.
type Loader struct {
	log *slog.Logger

	image atomic.Pointer[Image]
	// published is the newest image every publisher has been given:
	// WaitFor looks at it, so that a request answered after WaitFor sees
	// the publishers' effects (a dynamic config installed, a log created),
	// not just the image.
	published atomic.Pointer[Image]

	mu         sync.Mutex // serializes updates and publisher changes
	publishers []Publisher
	failed     error
	// catchingUp holds publishing back (HoldUntilCaughtUp): the batches
	// and snapshots handed over build working, which the publishers get
	// as one delta at CaughtUpTo.
	catchingUp bool
	working    *Image

	waitMu  sync.Mutex
	waiters []imageWaiter
}

type imageWaiter struct {
	cond func(*Image) bool
	ch   chan struct{}
}

// NewLoader returns a loader at the empty image.
func NewLoader(logger *slog.Logger) *Loader {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Loader{log: logger.With("component", "metadata-loader")}
	l.image.Store(Empty)
	l.published.Store(Empty)
	return l
}

// Image returns the newest image, which the publishers may still be
// applying (WaitFor waits for them). Safe for concurrent use, and
// lock-free: the produce and fetch paths call it.
func (l *Loader) Image() *Image { return l.image.Load() }

// HoldUntilCaughtUp makes the loader build images without publishing them
// until CaughtUpTo, as Kafka's MetadataLoader publishes nothing before it
// has caught up with the high watermark. At start-up the log replays every
// earlier change: published one batch at a time, a publisher would act on
// states long gone (recreate the log of a topic that was deleted and
// created again, with the old topic id, and take the newer log for a
// stray; load coordinators for leader epochs that later batches revoke).
// Held back, the publishers get the present state as one delta. Image and
// WaitFor see only what was published.
func (l *Loader) HoldUntilCaughtUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.catchingUp {
		l.catchingUp, l.working = true, l.image.Load()
	}
}

// CatchingUp reports whether publishing is held back.
func (l *Loader) CatchingUp() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.catchingUp
}

// CaughtUpTo ends HoldUntilCaughtUp once the batches replayed reach
// highWatermark (the offset after the last committed batch): everything
// replayed since is then published as one delta from the image the
// publishers last had. It reports whether the loader is publishing.
func (l *Loader) CaughtUpTo(highWatermark int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.catchingUp {
		return true
	}
	if l.failed != nil || l.working.Offset+1 < highWatermark {
		return false
	}
	l.catchingUp = false
	target := l.working
	l.working = nil
	if target == l.image.Load() {
		return true
	}
	d, err := deltaBetween(l.image.Load(), target)
	if err != nil {
		l.fail(err)
		return false
	}
	l.log.Info("caught up with the metadata log; publishing", "offset", target.Offset)
	l.publishImage(d, target)
	return true
}

// deltaBetween is the delta that takes base to target, for publishers
// that last saw base; target is what it applies to.
func deltaBetween(base, target *Image) (*Delta, error) {
	if base == Empty {
		return fromEmpty(target)
	}
	return snapshotDelta(base, target)
}

// fromEmpty replays im into a delta over the empty image.
func fromEmpty(im *Image) (*Delta, error) {
	d := NewDelta(Empty)
	for _, r := range im.Records() {
		if err := d.Replay(r); err != nil {
			return nil, fmt.Errorf("metadata: replaying the image: %w", err)
		}
	}
	d.SetProvenance(im.Offset, im.Epoch)
	return d, nil
}

// InstallPublisher adds a publisher; it first receives the current image
// as a delta from the empty image, so it sees everything that exists.
func (l *Loader) InstallPublisher(p Publisher) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return l.failed
	}
	im := l.image.Load()
	d, err := fromEmpty(im)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	// The publisher gets the real image (the delta's own would be an
	// equal copy).
	p.OnMetadataUpdate(d, im)
	l.publishers = append(l.publishers, p)
	return nil
}

// HandleCommit replays one committed batch of records (framed metadata
// records) whose last offset and epoch are given, and publishes the result.
// A record that does not decode or does not fit stops the loader: the
// error is returned, logged, and every later call fails with it.
func (l *Loader) HandleCommit(lastOffset int64, epoch int32, records [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return l.failed
	}
	d := NewDelta(l.current())
	for _, raw := range records {
		rec, err := Decode(raw)
		if err == nil {
			err = d.Replay(rec)
		}
		if err != nil {
			return l.fail(fmt.Errorf("metadata: record in the batch ending at offset %d: %w", lastOffset, err))
		}
	}
	d.SetProvenance(lastOffset, epoch)
	l.publish(d)
	return nil
}

// current is the image the next batch applies to: the working image
// while catching up, else the published one. mu held.
func (l *Loader) current() *Image {
	if l.catchingUp {
		return l.working
	}
	return l.image.Load()
}

// HandleSnapshot replaces the image with a snapshot's, publishing the
// difference: topics the snapshot lacks are deleted, the others changed.
func (l *Loader) HandleSnapshot(offset int64, epoch int32, records [][]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return l.failed
	}
	fresh := NewDelta(Empty)
	for _, raw := range records {
		rec, err := Decode(raw)
		if err == nil {
			err = fresh.Replay(rec)
		}
		if err != nil {
			return l.fail(fmt.Errorf("metadata: snapshot at offset %d: %w", offset, err))
		}
	}
	fresh.SetProvenance(offset, epoch)
	if l.catchingUp {
		l.working = fresh.Apply()
		return nil
	}
	d, err := snapshotDelta(l.image.Load(), fresh.Apply())
	if err != nil {
		return l.fail(err)
	}
	l.publish(d)
	return nil
}

// snapshotDelta expresses the move from base to a snapshot's image as a
// delta over base.
func snapshotDelta(base, snap *Image) (*Delta, error) {
	d := NewDelta(base)
	for _, t := range base.Topics() {
		if st, ok := snap.TopicByID(t.ID); !ok || st.Name != t.Name {
			if err := d.Replay(&RemoveTopicRecord{TopicID: t.ID}); err != nil {
				return nil, err
			}
		}
	}
	for id := range base.Brokers {
		if snap.Brokers[id] == nil {
			d.brokers[id] = nil
		}
	}
	for r := range base.Configs {
		if snap.Configs[r] == nil {
			d.configs[r] = nil
		}
	}
	for _, rec := range snap.Records() {
		if tr, ok := rec.(*TopicRecord); ok && d.topic(tr.TopicID) != nil {
			continue // kept: its partitions are replayed over it below
		}
		if cr, ok := rec.(*ConfigRecord); ok {
			// Replace whole config maps rather than merging.
			res := ConfigResource{cr.ResourceType, cr.ResourceName}
			if _, done := d.configs[res]; !done || d.configs[res] == nil {
				d.configs[res] = map[string]string{}
			}
		}
		if err := d.Replay(rec); err != nil {
			return nil, fmt.Errorf("metadata: applying snapshot: %w", err)
		}
	}
	d.SetProvenance(snap.Offset, snap.Epoch)
	return d, nil
}

// publish applies d and hands the result to the publishers, or, while
// catching up, only makes it the working image. mu held.
func (l *Loader) publish(d *Delta) {
	if l.catchingUp {
		l.working = d.Apply()
		return
	}
	l.publishImage(d, d.Apply())
}

func (l *Loader) publishImage(d *Delta, im *Image) {
	l.image.Store(im)
	for _, p := range l.publishers {
		p.OnMetadataUpdate(d, im)
	}
	l.published.Store(im)
	l.wake(im)
}

func (l *Loader) fail(err error) error {
	l.failed = err
	l.log.Error("metadata log cannot be replayed; this node stops applying metadata", "err", err)
	return err
}

// WaitForOffset blocks until the published image has reached offset (or
// ctx ends).
func (l *Loader) WaitForOffset(ctx context.Context, offset int64) error {
	return l.WaitFor(ctx, func(im *Image) bool { return im.Offset >= offset })
}

// WaitFor blocks until cond holds for an image that every publisher has
// been given (or ctx ends): a broker answering a topic creation waits until
// its own metadata shows the topic and its logs exist, so that the client's
// next request here finds it.
func (l *Loader) WaitFor(ctx context.Context, cond func(*Image) bool) error {
	if cond(l.published.Load()) {
		return nil
	}
	w := imageWaiter{cond: cond, ch: make(chan struct{})}
	l.waitMu.Lock()
	l.waiters = append(l.waiters, w)
	l.waitMu.Unlock()
	l.wake(l.published.Load()) // published between the check and the append
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		l.waitMu.Lock()
		for i, o := range l.waiters {
			if o.ch == w.ch {
				l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
				break
			}
		}
		l.waitMu.Unlock()
		return ctx.Err()
	}
}

func (l *Loader) wake(im *Image) {
	l.waitMu.Lock()
	kept := l.waiters[:0]
	for _, w := range l.waiters {
		if w.cond(im) {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	l.waiters = kept
	l.waitMu.Unlock()
}
