package memory

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// granted reports whether a Reserve running in a goroutine has returned.
type pending struct {
	done chan struct{}
	ok   atomic.Bool
}

func reserveAsync(p *Pool, n int64, cancel <-chan struct{}) *pending {
	r := &pending{done: make(chan struct{})}
	go func() {
		ok, _ := p.Reserve(n, cancel)
		r.ok.Store(ok)
		close(r.done)
	}()
	return r
}

func (r *pending) returned() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// waitFor polls until cond holds (no sleeps as synchronisation).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPoolStrictFIFO(t *testing.T) {
	p := NewPool(100)
	never := make(chan struct{})
	if ok, waited := p.Reserve(60, never); !ok || waited {
		t.Fatalf("first reservation: ok=%v waited=%v", ok, waited)
	}
	if p.TryReserve(50) {
		t.Fatal("50 of 40 available granted")
	}
	big := reserveAsync(p, 50, never)
	waitFor(t, "the 50 to wait", func() bool { return p.Waiting() == 1 })
	// A small one that would fit waits behind the big one (no starvation).
	if p.TryReserve(10) {
		t.Fatal("10 jumped the line")
	}
	small := reserveAsync(p, 10, never)
	waitFor(t, "the 10 to wait", func() bool { return p.Waiting() == 2 })
	p.Release(60)
	waitFor(t, "both granted", func() bool { return big.returned() && small.returned() })
	if !big.ok.Load() || !small.ok.Load() || p.Available() != 40 || p.Used() != 60 {
		t.Fatalf("after grants: available %d used %d", p.Available(), p.Used())
	}
	if p.DepletedTime() <= 0 {
		t.Fatal("no depleted time recorded")
	}
}

// A reservation larger than the pool waits until no other reservation is
// held (Takes do not hold it back) and is then served alone; a Take makes
// reservations that fit wait for the bytes to come back.
func TestPoolOversizedAndTake(t *testing.T) {
	p := NewPool(100)
	never := make(chan struct{})
	p.Reserve(30, never)
	huge := reserveAsync(p, 250, never)
	waitFor(t, "the huge one to wait", func() bool { return p.Waiting() == 1 })
	p.Take(50) // a response: does not hold the huge one back
	p.Release(30)
	waitFor(t, "the huge one granted", huge.returned)
	if p.Available() != -200 {
		t.Fatalf("available %d, want -200", p.Available())
	}
	if p.TryReserve(1) {
		t.Fatal("a reservation was granted beside an oversized one")
	}
	p.Release(250)
	if p.TryReserve(60) {
		t.Fatal("60 granted with 50 available")
	}
	p.Return(50)
	if p.Available() != 100 || !p.TryReserve(60) {
		t.Fatalf("available %d after the take came back", p.Available())
	}
}

// A cancelled reservation leaves the line and lets the next one through;
// nothing leaks, also when cancel and grant race.
func TestPoolCancel(t *testing.T) {
	p := NewPool(100)
	never := make(chan struct{})
	p.Reserve(100, never)
	cancel := make(chan struct{})
	first := reserveAsync(p, 80, cancel)
	second := reserveAsync(p, 20, never)
	waitFor(t, "two waiters", func() bool { return p.Waiting() == 2 })
	p.Release(20) // 20 free: the 80 at the head does not fit, so the 20 waits too
	close(cancel)
	waitFor(t, "cancel and grant", func() bool { return first.returned() && second.returned() })
	if first.ok.Load() || !second.ok.Load() {
		t.Fatalf("first ok=%v second ok=%v", first.ok.Load(), second.ok.Load())
	}
	p.Release(80) // the rest of the first reservation
	p.Release(20) // the second's
	if p.Available() != 100 || p.Waiting() != 0 {
		t.Fatalf("available %d waiting %d", p.Available(), p.Waiting())
	}

	// Races between cancel and grant never leak bytes.
	for range 200 {
		q := NewPool(10)
		q.Reserve(10, never)
		c := make(chan struct{})
		r := reserveAsync(q, 10, c)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); close(c) }()
		go func() { defer wg.Done(); q.Release(10) }()
		wg.Wait()
		<-r.done
		if r.ok.Load() {
			q.Release(10)
		}
		if q.Available() != 10 {
			t.Fatalf("leaked: available %d", q.Available())
		}
	}
}

func TestUnboundedPool(t *testing.T) {
	for _, p := range []*Pool{nil, NewPool(0), NewPool(-1)} {
		if ok, waited := p.Reserve(1<<40, nil); !ok || waited || !p.TryReserve(1<<40) || p.Bounded() {
			t.Fatal("unbounded pool refused")
		}
		p.Take(5)
		p.Return(5)
		if p.Used() != 0 || p.Waiting() != 0 {
			t.Fatal("unbounded pool counts")
		}
	}
}

func BenchmarkReserveRelease(b *testing.B) {
	p := NewPool(1 << 30)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p.Reserve(4096, nil)
			p.Release(4096)
		}
	})
}
