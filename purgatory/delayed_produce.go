package purgatory

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DelayedProduce is an acks=all produce waiting until the high watermark
// of every partition it appended to passes the last appended offset, or
// until the request's timeout (Kafka's DelayedProduce). check(i) reports
// whether partition i is done and with which error (for example the
// partition was deleted); on expiry the partitions still pending get
// REQUEST_TIMED_OUT. complete receives one error per partition.
type DelayedProduce struct {
	Operation
	check    func(i int) (bool, error)
	complete func(errs []error)
	pending  []bool
	errs     []error
}

// NewDelayedProduce returns a DelayedProduce over n partitions that
// expires after timeout.
func NewDelayedProduce(timeout time.Duration, n int, check func(i int) (bool, error), complete func(errs []error)) *DelayedProduce {
	d := &DelayedProduce{check: check, complete: complete, pending: make([]bool, n), errs: make([]error, n)}
	for i := range d.pending {
		d.pending[i] = true
	}
	d.Init(d, timeout)
	return d
}

// TryComplete checks the pending partitions and completes when none is
// left. It runs under the operation's lock, so pending needs no other.
func (d *DelayedProduce) TryComplete() bool {
	left := 0
	for i, p := range d.pending {
		if !p {
			continue
		}
		if done, err := d.check(i); done {
			d.pending[i], d.errs[i] = false, err
		} else {
			left++
		}
	}
	if left == 0 {
		return d.ForceComplete()
	}
	return false
}

// OnExpiration fails the partitions still waiting with REQUEST_TIMED_OUT.
func (d *DelayedProduce) OnExpiration() {
	d.lock.Lock()
	defer d.lock.Unlock()
	for i, p := range d.pending {
		if p {
			d.errs[i] = kerr.RequestTimedOut
		}
	}
}

// OnComplete hands the outcome to the replica manager.
func (d *DelayedProduce) OnComplete() { d.complete(d.errs) }
