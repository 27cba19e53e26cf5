package main

import (
	"context"
	"sync/atomic"
	"time"
)

// pacer spaces sends evenly at a target rate shared by every goroutine that
// calls Wait: send n (counting from 0) is due at start + n/rate. The schedule
// is absolute, so a sender that fell behind (a stall, a full client buffer)
// catches up instead of losing the sends, and the count over any long window
// is rate*window to within one send. Sends due less than pacerSlack ahead go
// at once, so at high rates a goroutine sleeps about once per pacerSlack
// rather than once per record: bursts are at most rate*pacerSlack records,
// not a second's worth.
//
// A nil *pacer does not pace. Wait is safe for concurrent use.
type pacer struct {
	clock    pacerClock
	start    time.Time
	interval float64 // nanoseconds between sends
	next     atomic.Int64
}

// pacerSlack is how early a send may go rather than sleeping for it.
const pacerSlack = time.Millisecond

// pacerClock is the time source; tests use a fake one.
type pacerClock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done, returning ctx.Err() then.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newPacer paces at rate sends per second from now; rate <= 0 means no
// pacing (nil).
func newPacer(rate float64, clock pacerClock) *pacer {
	if rate <= 0 {
		return nil
	}
	if clock == nil {
		clock = realClock{}
	}
	return &pacer{clock: clock, start: clock.Now(), interval: float64(time.Second) / rate}
}

// Wait claims the next send slot and returns when it is due (or within
// pacerSlack of it). It returns ctx.Err() if ctx ends first; the slot is
// then lost, which only matters at the end of a run.
func (p *pacer) Wait(ctx context.Context) error {
	if p == nil {
		return ctx.Err()
	}
	n := p.next.Add(1) - 1
	due := p.start.Add(time.Duration(float64(n) * p.interval))
	if d := due.Sub(p.clock.Now()); d > pacerSlack {
		return p.clock.Sleep(ctx, d)
	}
	return ctx.Err()
}
