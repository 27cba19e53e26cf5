package purgatory

import (
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type tp struct {
	Topic     string
	Partition int32
}

func TestTryCompleteElseWatchCompletesImmediately(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[tp]("Fetch", Options{})
		defer p.Close()
		op := newTestOp(time.Second)
		op.ready.Store(true)
		if !p.TryCompleteElseWatch(op, []tp{{"a", 0}, {"a", 1}}) {
			t.Fatal("TryCompleteElseWatch = false, want true for a ready op")
		}
		if got := op.completions.Load(); got != 1 {
			t.Fatalf("completions = %d, want 1", got)
		}
		if p.Watched() != 0 || p.Delayed() != 0 {
			t.Fatalf("Watched, Delayed = %d, %d; want 0, 0", p.Watched(), p.Delayed())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if op.expirations.Load() != 0 || op.completions.Load() != 1 {
			t.Fatalf("after deadline: expirations %d completions %d", op.expirations.Load(), op.completions.Load())
		}
	})
}

// An operation that becomes ready between the first try and the watch is completed by the
// second try (the race TryCompleteElseWatch closes).
func TestTryCompleteElseWatchSecondTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[string]("Produce", Options{})
		defer p.Close()
		op := &flipOp{}
		op.Init(op, time.Second)
		if !p.TryCompleteElseWatch(op, []string{"k"}) {
			t.Fatal("want completion by the second try")
		}
		if op.tries != 2 {
			t.Fatalf("tries = %d, want 2", op.tries)
		}
		if p.Delayed() != 0 {
			t.Fatalf("Delayed = %d, want 0", p.Delayed())
		}
		// Still on the watcher list (as in Kafka) until a visit or a purge.
		if p.Watched() != 1 {
			t.Fatalf("Watched = %d, want 1", p.Watched())
		}
		if n := p.CheckAndComplete("k"); n != 0 || p.Watched() != 0 {
			t.Fatalf("CheckAndComplete = %d, Watched = %d; want 0, 0", n, p.Watched())
		}
	})
}

// flipOp fails its first TryComplete and succeeds on the second.
type flipOp struct {
	Operation
	tries int // guarded by the op lock
}

func (o *flipOp) TryComplete() bool {
	o.tries++
	if o.tries == 2 {
		return o.ForceComplete()
	}
	return false
}
func (o *flipOp) OnComplete()   {}
func (o *flipOp) OnExpiration() {}

func TestCheckAndComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[tp]("Fetch", Options{})
		defer p.Close()
		k1, k2 := tp{"orders", 0}, tp{"orders", 1}
		op := newTestOp(time.Minute)
		if p.TryCompleteElseWatch(op, []tp{k1, k2}) {
			t.Fatal("TryCompleteElseWatch = true for an op that is not ready")
		}
		if p.Watched() != 2 || p.Delayed() != 1 {
			t.Fatalf("Watched, Delayed = %d, %d; want 2, 1", p.Watched(), p.Delayed())
		}
		if n := p.CheckAndComplete(k1); n != 0 {
			t.Fatalf("CheckAndComplete before ready = %d", n)
		}
		if n := p.CheckAndComplete(tp{"other", 0}); n != 0 {
			t.Fatalf("CheckAndComplete on unwatched key = %d", n)
		}
		op.ready.Store(true)
		if n := p.CheckAndComplete(k1); n != 1 {
			t.Fatalf("CheckAndComplete = %d, want 1", n)
		}
		if op.completions.Load() != 1 || op.expirations.Load() != 0 {
			t.Fatalf("completions %d expirations %d", op.completions.Load(), op.expirations.Load())
		}
		if p.Delayed() != 0 {
			t.Fatalf("Delayed = %d, want 0: the timer entry must be cancelled", p.Delayed())
		}
		if p.Watched() != 1 { // still on k2's list
			t.Fatalf("Watched = %d, want 1", p.Watched())
		}
		if n := p.CheckAndComplete(k2); n != 0 {
			t.Fatalf("CheckAndComplete(k2) = %d, want 0 (already completed)", n)
		}
		if p.Watched() != 0 {
			t.Fatalf("Watched = %d, want 0", p.Watched())
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if op.completions.Load() != 1 || op.expirations.Load() != 0 {
			t.Fatalf("after deadline: completions %d expirations %d", op.completions.Load(), op.expirations.Load())
		}
	})
}

func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[string]("Fetch", Options{})
		defer p.Close()
		start := time.Now()
		op := newTestOp(500 * time.Millisecond)
		p.TryCompleteElseWatch(op, []string{"a", "b"})

		time.Sleep(499 * time.Millisecond)
		synctest.Wait()
		if op.IsCompleted() {
			t.Fatal("expired before its deadline")
		}
		<-op.completedOnce
		synctest.Wait()
		if got := op.completedAt.Sub(start); got != 500*time.Millisecond {
			t.Fatalf("completed after %v, want exactly 500ms in virtual time", got)
		}
		if got := op.eventLog(); !slices.Equal(got, []string{"expire", "complete"}) {
			t.Fatalf("events = %v, want [expire complete]", got)
		}
		if p.Delayed() != 0 {
			t.Fatalf("Delayed = %d", p.Delayed())
		}
		// Late events change nothing.
		op.ready.Store(true)
		if n := p.CheckAndComplete("a"); n != 0 {
			t.Fatalf("CheckAndComplete after expiry = %d", n)
		}
		if op.ForceComplete() {
			t.Fatal("ForceComplete after expiry = true")
		}
		if op.completions.Load() != 1 || op.expirations.Load() != 1 {
			t.Fatalf("completions %d expirations %d", op.completions.Load(), op.expirations.Load())
		}
	})
}

// Expiry accuracy on the real clock: a 500ms operation expires within a few ms of its deadline.
func TestExpiryAccuracyRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	p := New[int]("Fetch", Options{})
	defer p.Close()
	var ops []*testOp
	start := time.Now()
	for i := range 50 {
		op := newTestOp(500*time.Millisecond + time.Duration(i)*time.Millisecond)
		p.TryCompleteElseWatch(op, []int{i})
		ops = append(ops, op)
	}
	var worst time.Duration
	for i, op := range ops {
		<-op.completedOnce
		op.mu.Lock()
		late := op.completedAt.Sub(start) - op.Timeout()
		op.mu.Unlock()
		if late < 0 {
			t.Fatalf("op %d expired %v early", i, -late)
		}
		worst = max(worst, late)
	}
	t.Logf("worst lateness over 50 ops at 500-549ms: %v", worst)
	if worst > 25*time.Millisecond { // generous for -race on a loaded CI machine
		t.Fatalf("worst lateness %v", worst)
	}
}

// Many goroutines call CheckAndComplete and ForceComplete while deadlines hit: every operation
// completes exactly once, expiry always runs OnExpiration first, and the completions the
// callers were told about add up.
func TestExactlyOnceUnderContention(t *testing.T) {
	const (
		numOps  = 3000
		numKeys = 16
		workers = 8
	)
	p := New[int]("Contention", Options{PurgeInterval: 100})
	defer p.Close()

	r := rand.New(rand.NewPCG(42, 42))
	ops := make([]*testOp, numOps)
	for i := range ops {
		ops[i] = newTestOp(time.Duration(1+r.IntN(30)) * time.Millisecond)
	}
	var byCaller atomic.Int64 // completions reported to a caller (true / counted)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for {
				select {
				case <-stop:
					return
				default:
				}
				byCaller.Add(int64(p.CheckAndComplete(r.IntN(numKeys))))
				i := r.IntN(numOps)
				switch r.IntN(8) {
				case 0, 1, 2:
					ops[i].ready.Store(true)
				case 3:
					if ops[i].ForceComplete() {
						byCaller.Add(1)
					}
				}
			}
		})
	}
	for i, op := range ops {
		keys := []int{i % numKeys, (i * 7) % numKeys, (i + 3) % numKeys}
		if r.IntN(10) == 0 {
			op.ready.Store(true)
		}
		if p.TryCompleteElseWatch(op, keys) {
			byCaller.Add(1)
		}
	}
	for _, op := range ops {
		select {
		case <-op.completedOnce:
		case <-time.After(10 * time.Second):
			t.Fatal("an operation never completed")
		}
	}
	close(stop)
	wg.Wait()

	var expired int64
	for i, op := range ops {
		if c := op.completions.Load(); c != 1 {
			t.Fatalf("op %d: %d completions", i, c)
		}
		switch e := op.expirations.Load(); e {
		case 0:
		case 1:
			expired++
			if !op.expiredFirst {
				t.Fatalf("op %d: events %v, want expire then complete", i, op.eventLog())
			}
		default:
			t.Fatalf("op %d: %d expirations", i, e)
		}
	}
	if got := byCaller.Load() + expired; got != numOps {
		t.Fatalf("completed by callers %d + expired %d = %d, want %d", byCaller.Load(), expired, got, numOps)
	}
	t.Logf("completed by callers: %d, expired: %d", byCaller.Load(), expired)
	if p.Delayed() != 0 {
		t.Fatalf("Delayed = %d after all completed", p.Delayed())
	}
}

// 100k operations watched on two keys each and completed behind the purgatory's back
// (ForceComplete) stay on watcher lists until the reaper's purge: memory stays bounded.
func TestWatcherPurgeKeepsMemoryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100_000
		p := New[int]("Fetch", Options{PurgeInterval: 1000})
		defer p.Close()
		peak := 0
		for i := range n {
			op := newTestOp(time.Hour)
			p.TryCompleteElseWatch(op, []int{i % 1000, 1000 + i%7})
			op.ForceComplete()
			if i%10_000 == 9_999 {
				peak = max(peak, p.Watched())
				time.Sleep(250 * time.Millisecond) // let the reaper run its purge check
				synctest.Wait()
				if w := p.Watched(); w > 2*1000 {
					t.Fatalf("after %d ops and a reaper pass: Watched = %d", i+1, w)
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		if w, d := p.Watched(), p.Delayed(); w != 0 || d != 0 {
			t.Fatalf("Watched, Delayed = %d, %d; want 0, 0", w, d)
		}
		keys := 0
		for i := range p.shards {
			keys += len(p.shards[i].watchers)
		}
		if keys != 0 {
			t.Fatalf("%d keys still in watcher maps", keys)
		}
		t.Logf("peak Watched before a purge: %d", peak)
	})
}

// Operations completed by CheckAndComplete leave the list at once, without a purge.
func TestCheckAndCompleteDropsCompleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[string]("Produce", Options{})
		defer p.Close()
		const n = 100_000
		ops := make([]*testOp, n)
		for i := range ops {
			ops[i] = newTestOp(time.Hour)
			p.TryCompleteElseWatch(ops[i], []string{"hot"})
		}
		if p.Watched() != n || p.Delayed() != n {
			t.Fatalf("Watched, Delayed = %d, %d", p.Watched(), p.Delayed())
		}
		for _, op := range ops {
			op.ready.Store(true)
		}
		if got := p.CheckAndComplete("hot"); got != n {
			t.Fatalf("CheckAndComplete = %d, want %d", got, n)
		}
		if p.Watched() != 0 || p.Delayed() != 0 {
			t.Fatalf("Watched, Delayed = %d, %d; want 0, 0", p.Watched(), p.Delayed())
		}
	})
}

func TestCancelForKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[string]("Rebalance", Options{})
		defer p.Close()
		a, b := newTestOp(time.Second), newTestOp(time.Second)
		p.TryCompleteElseWatch(a, []string{"g1"})
		p.TryCompleteElseWatch(b, []string{"g1", "g2"})
		got := p.CancelForKey("g1")
		if len(got) != 2 || p.Delayed() != 0 || p.Watched() != 1 {
			t.Fatalf("cancelled %d, Delayed %d, Watched %d", len(got), p.Delayed(), p.Watched())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if a.IsCompleted() || b.IsCompleted() {
			t.Fatal("cancelled operations must not expire")
		}
	})
}

func TestSharedLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New[string]("Rebalance", Options{})
		defer p.Close()
		var groupLock sync.Mutex
		a, b := &testOp{completedOnce: make(chan struct{})}, &testOp{completedOnce: make(chan struct{})}
		a.InitWithLock(a, time.Second, &groupLock)
		b.InitWithLock(b, time.Second, &groupLock)
		p.TryCompleteElseWatch(a, []string{"g"})
		p.TryCompleteElseWatch(b, []string{"g"})
		a.ready.Store(true)
		b.ready.Store(true)
		if n := p.CheckAndComplete("g"); n != 2 {
			t.Fatalf("CheckAndComplete = %d", n)
		}
	})
}

func TestInitMisuse(t *testing.T) {
	mustPanic(t, "Init with another op", func() {
		a, b := &testOp{}, &testOp{}
		a.Init(b, time.Second)
	})
	mustPanic(t, "no Init", func() {
		p := New[string]("x", Options{})
		defer p.Close()
		p.TryCompleteElseWatch(&testOp{}, []string{"k"})
	})
	mustPanic(t, "no keys", func() {
		p := New[string]("x", Options{})
		defer p.Close()
		p.TryCompleteElseWatch(newTestOp(time.Second), nil)
	})
}

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

// A panic in OnComplete on an expiration worker is logged; the worker keeps going.
func TestExpirationPanicRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs strings.Builder
		var mu sync.Mutex
		p := New[string]("Fetch", Options{Logger: newTestLogger(&logs, &mu)})
		defer p.Close()
		bad := &panicOp{}
		bad.Init(bad, time.Millisecond)
		good := newTestOp(2 * time.Millisecond)
		p.TryCompleteElseWatch(bad, []string{"k"})
		p.TryCompleteElseWatch(good, []string{"k"})
		<-good.completedOnce
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(logs.String(), "boom") {
			t.Fatalf("panic not logged: %q", logs.String())
		}
	})
}

type panicOp struct{ Operation }

func (*panicOp) TryComplete() bool { return false }
func (*panicOp) OnComplete()       { panic("boom") }
func (*panicOp) OnExpiration()     {}

func TestCloseIdempotentNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := range 20 {
		p := New[int](fmt.Sprint("p", i), Options{ExpirationWorkers: 3})
		for j := range 100 {
			p.TryCompleteElseWatch(newTestOp(time.Duration(j)*time.Millisecond), []int{j})
		}
		if i%2 == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		p.Close()
		p.Close()
		// Still usable, but nothing expires any more.
		op := newTestOp(time.Millisecond)
		p.TryCompleteElseWatch(op, []int{1})
		op.ready.Store(true)
		if p.CheckAndComplete(1) < 1 {
			t.Fatal("CheckAndComplete after Close did not complete")
		}
	}
	waitGoroutines(t, before)
}

func TestGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	fetch := New[string]("Fetch", Options{Registerer: reg})
	produce := New[string]("Produce", Options{Registerer: reg})
	defer produce.Close()
	for i := range 3 {
		fetch.TryCompleteElseWatch(newTestOp(time.Hour), []string{"a", fmt.Sprint(i)})
	}
	want := map[string]float64{
		"kafka_server_delayedoperationpurgatory_numdelayedoperations/Fetch":   3,
		"kafka_server_delayedoperationpurgatory_numdelayedoperations/Produce": 0,
		"kafka_server_delayedoperationpurgatory_purgatorysize/Fetch":          6,
		"kafka_server_delayedoperationpurgatory_purgatorysize/Produce":        0,
	}
	if got := gather(t, reg); !maps.Equal(got, want) {
		t.Fatalf("gauges = %v, want %v", got, want)
	}
	mustPanic(t, "duplicate name", func() { New[string]("Fetch", Options{Registerer: reg}) })
	fetch.Close()
	if got := gather(t, reg); len(got) != 2 {
		t.Fatalf("after Close: %v, want only Produce's gauges", got)
	}
	again := New[string]("Fetch", Options{Registerer: reg}) // the name is free again
	again.Close()
	// A second broker in the same process uses its own registry.
	other := New[string]("Fetch", Options{Registerer: prometheus.NewRegistry()})
	other.Close()
}

func newTestLogger(w *strings.Builder, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{w, mu}, nil))
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// gather returns metric/label -> value for the purgatory gauges in reg.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			label := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "delayedOperation" {
					label = l.GetValue()
				}
			}
			got[mf.GetName()+"/"+label] = m.GetGauge().GetValue()
		}
	}
	return got
}

// CheckAndCompleteAll tries every watched operation once, whatever its
// keys, and counts those it completed.
func TestCheckAndCompleteAll(t *testing.T) {
	p := New[string]("test", Options{})
	defer p.Close()
	ops := []*testOp{newTestOp(time.Hour), newTestOp(time.Hour), newTestOp(time.Hour)}
	p.TryCompleteElseWatch(ops[0], []string{"a"})
	p.TryCompleteElseWatch(ops[1], []string{"a", "b"})
	p.TryCompleteElseWatch(ops[2], []string{"c"})
	if n := p.CheckAndCompleteAll(); n != 0 {
		t.Fatalf("completed %d operations that were not ready", n)
	}
	ops[1].ready.Store(true)
	ops[2].ready.Store(true)
	if n := p.CheckAndCompleteAll(); n != 2 {
		t.Fatalf("completed %d, want 2", n)
	}
	if ops[0].IsCompleted() || !ops[1].IsCompleted() || !ops[2].IsCompleted() {
		t.Fatal("wrong operations completed")
	}
	if c := ops[1].completions.Load(); c != 1 {
		t.Fatalf("operation watched on two keys completed %d times", c)
	}
}
