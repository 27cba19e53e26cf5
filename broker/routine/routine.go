// Package routine tracks the goroutines of a component so that its Close
// can stop them and wait for every one (etcd's GoAttach, nats-server's
// startGoRoutine). Every long-lived goroutine in Moldau is started through a
// Group: Go refuses once Stop has begun, and StopAndWait returns only when
// all of them have returned.
//
// A Group is safe for concurrent use; its zero value is ready to use.
//
// Background and LowerThreadPriority run work that must not compete with
// the request path (bulk log creation and deletion, the log cleaner) on
// an OS thread of its own with a higher nice value, so that the kernel
// gives the CPU to everyone else first.
package routine

import (
	"context"
	"sync"
	"time"
)

// Group starts and tracks goroutines.
type Group struct {
	mu       sync.Mutex
	stopped  bool
	n        int
	stopping chan struct{} // closed by Stop
	empty    chan struct{} // closed once stopped and n == 0
}

func (g *Group) init() {
	if g.stopping == nil {
		g.stopping = make(chan struct{})
		g.empty = make(chan struct{})
	}
}

// Go runs fn in a new goroutine unless the group is stopped, and reports
// whether it did. fn must return soon after done (Stopping) is closed.
func (g *Group) Go(fn func(done <-chan struct{})) bool {
	g.mu.Lock()
	g.init()
	if g.stopped {
		g.mu.Unlock()
		return false
	}
	g.n++
	done := g.stopping
	g.mu.Unlock()
	go func() {
		defer g.exit()
		fn(done)
	}()
	return true
}

// Every runs fn every interval, in one tracked goroutine, until Stop. A
// non-positive interval starts nothing and reports false.
func (g *Group) Every(interval time.Duration, fn func()) bool {
	return g.EveryOrWake(interval, nil, fn)
}

// EveryOrWake is Every that also runs fn when wake receives (a send to a
// channel of capacity 1 that never blocks asks for a run soon; nil:
// never).
func (g *Group) EveryOrWake(interval time.Duration, wake <-chan struct{}, fn func()) bool {
	if interval <= 0 {
		return false
	}
	return g.Go(func(done <-chan struct{}) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			case <-wake:
			}
			fn()
		}
	})
}

func (g *Group) exit() {
	g.mu.Lock()
	g.n--
	if g.stopped && g.n == 0 {
		close(g.empty)
	}
	g.mu.Unlock()
}

// Stop refuses new goroutines and closes Stopping. Idempotent.
func (g *Group) Stop() {
	g.mu.Lock()
	g.init()
	if !g.stopped {
		g.stopped = true
		close(g.stopping)
		if g.n == 0 {
			close(g.empty)
		}
	}
	g.mu.Unlock()
}

// Stopping returns a channel closed when Stop is called.
func (g *Group) Stopping() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	return g.stopping
}

// Done returns a channel closed once the group is stopped and every
// goroutine has returned.
func (g *Group) Done() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	return g.empty
}

// Wait waits until the group is stopped and empty.
func (g *Group) Wait() { <-g.Done() }

// StopAndWait stops the group and waits for its goroutines.
func (g *Group) StopAndWait() {
	g.Stop()
	g.Wait()
}

// Context returns a context cancelled when done is closed (a goroutine of
// a Group stopping) or cancel is called; call cancel when finished, which
// also ends the goroutine that watches done.
func Context(done <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
