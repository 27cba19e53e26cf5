package purgatory

import "time"

// DelayedFetch is a fetch waiting for fetch.min.bytes to arrive or for
// fetch.max.wait.ms to pass (Kafka's DelayedFetch). The replica manager
// owns the reading: ready reports whether enough bytes have arrived since
// the fetch first read (or a partition changed so that the fetch must
// answer now), and complete reads again and sends the response. Both are
// functions so this package knows nothing of partitions.
type DelayedFetch struct {
	Operation
	ready    func() bool
	complete func()
}

// NewDelayedFetch returns a DelayedFetch that expires after maxWait.
func NewDelayedFetch(maxWait time.Duration, ready func() bool, complete func()) *DelayedFetch {
	d := &DelayedFetch{ready: ready, complete: complete}
	d.Init(d, maxWait)
	return d
}

// TryComplete completes the fetch once ready says so.
func (d *DelayedFetch) TryComplete() bool {
	if d.ready() {
		return d.ForceComplete()
	}
	return false
}

// OnExpiration does nothing: an expired fetch answers with what it has.
func (d *DelayedFetch) OnExpiration() {}

// OnComplete reads and responds.
func (d *DelayedFetch) OnComplete() { d.complete() }
