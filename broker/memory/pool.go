package memory

import (
	"sync"
	"time"
)

// Pool is a budget of bytes (Kafka's SimpleMemoryPool): a reservation
// takes bytes, Release gives them back. It hands out no buffers; the
// caller allocates what it reserved. The zero Pool and a Pool of size <= 0
// are unbounded (Kafka's MemoryPool.NONE): everything succeeds at once.
//
// Reserve waits, and its bytes go back with Release; Take never waits, and
// its bytes go back with Return. Reservations wait in arrival order: a
// reservation succeeds at once only if nobody is waiting and it fits, so
// a large reservation is not starved by small ones. A reservation larger
// than the whole pool is granted when no other reservation is held (Takes,
// being short-lived, do not hold it back) and is then alone. Take may
// drive the available bytes below zero; the waiters then wait until
// enough comes back. Safe for concurrent use.
type Pool struct {
	size int64

	mu        sync.Mutex
	available int64
	reserved  int64     // held by reservations (the rest of size - available is taken)
	waiters   []*waiter // FIFO
	// depletedSince is when the first waiter of the current run of
	// waiting began (zero while nobody waits); depleted accumulates the
	// finished runs (Kafka's MemoryPoolDepletedTimeTotal).
	depletedSince time.Time
	depleted      time.Duration
	now           func() time.Time
}

type waiter struct {
	n       int64
	ready   chan struct{}
	granted bool
}

// NewPool returns a pool of size bytes; size <= 0 is unbounded.
func NewPool(size int64) *Pool {
	return &Pool{size: size, available: size, now: time.Now}
}

// Bounded reports whether the pool has a size.
func (p *Pool) Bounded() bool { return p != nil && p.size > 0 }

// Size is the pool's size (<= 0: unbounded).
func (p *Pool) Size() int64 {
	if p == nil {
		return 0
	}
	return p.size
}

// Available is the bytes not reserved; negative after Takes beyond the
// size.
func (p *Pool) Available() int64 {
	if !p.Bounded() {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.available
}

// Used is the bytes reserved or taken.
func (p *Pool) Used() int64 {
	if !p.Bounded() {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size - p.available
}

// Waiting is the number of reservations waiting.
func (p *Pool) Waiting() int {
	if !p.Bounded() {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters)
}

// DepletedTime is the total time some reservation waited.
func (p *Pool) DepletedTime() time.Duration {
	if !p.Bounded() {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.depleted
	if !p.depletedSince.IsZero() {
		d += p.now().Sub(p.depletedSince)
	}
	return d
}

// fitsLocked reports whether a reservation of n bytes can be granted now.
func (p *Pool) fitsLocked(n int64) bool {
	if n > p.size {
		return p.reserved == 0 // alone
	}
	return p.available >= n
}

// TryReserve reserves n bytes if that is possible without waiting.
func (p *Pool) TryReserve(n int64) bool {
	if !p.Bounded() || n <= 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiters) > 0 || !p.fitsLocked(n) {
		return false
	}
	p.available -= n
	p.reserved += n
	return true
}

// Reserve reserves n bytes, waiting in line until they fit. It returns
// false, having reserved nothing, if done is closed first. waited tells
// whether the reservation had to wait.
func (p *Pool) Reserve(n int64, done <-chan struct{}) (ok, waited bool) {
	if !p.Bounded() || n <= 0 {
		return true, false
	}
	p.mu.Lock()
	if len(p.waiters) == 0 && p.fitsLocked(n) {
		p.available -= n
		p.reserved += n
		p.mu.Unlock()
		return true, false
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	if len(p.waiters) == 0 {
		p.depletedSince = p.now()
	}
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()

	select {
	case <-w.ready:
		return true, true
	case <-done:
	}
	p.mu.Lock()
	if w.granted {
		p.mu.Unlock()
		p.Release(n)
		return false, true
	}
	for i, x := range p.waiters {
		if x == w {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			break
		}
	}
	// Leaving may let the next in line through.
	p.grantLocked()
	p.mu.Unlock()
	return false, true
}

// Take takes n bytes without waiting, even beyond the size: for memory
// that is already allocated or must not wait (a small frame, a response,
// a decompressed batch). It makes reservations wait until the bytes come
// back with Return.
func (p *Pool) Take(n int64) {
	if !p.Bounded() || n <= 0 {
		return
	}
	p.mu.Lock()
	p.available -= n
	p.mu.Unlock()
}

// Return gives back n bytes taken with Take.
func (p *Pool) Return(n int64) {
	if !p.Bounded() || n <= 0 {
		return
	}
	p.mu.Lock()
	p.available += n
	p.grantLocked()
	p.mu.Unlock()
}

// Release gives back n bytes reserved with Reserve or TryReserve.
func (p *Pool) Release(n int64) {
	if !p.Bounded() || n <= 0 {
		return
	}
	p.mu.Lock()
	p.available += n
	p.reserved -= n
	p.grantLocked()
	p.mu.Unlock()
}

// grantLocked grants the waiters at the head of the line that fit.
func (p *Pool) grantLocked() {
	for len(p.waiters) > 0 && p.fitsLocked(p.waiters[0].n) {
		w := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		p.available -= w.n
		p.reserved += w.n
		w.granted = true
		close(w.ready)
	}
	if len(p.waiters) == 0 && !p.depletedSince.IsZero() {
		p.depleted += p.now().Sub(p.depletedSince)
		p.depletedSince = time.Time{}
	}
}
