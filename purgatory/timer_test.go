package purgatory

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeWheel drives the clock-free wheel by hand: times are integers in ms, tick 1, size 20.
type fakeWheel struct {
	t   *wheelTimer
	now int64
	ran []ranTask
}

type ranTask struct {
	id      int
	expires int64
	at      int64
}

func newFakeWheel() *fakeWheel {
	f := &fakeWheel{}
	f.t = newWheelTimer(1, 20, 0, func(task *TimerTask) { task.run() })
	return f
}

func (f *fakeWheel) add(id int, expires int64) *TimerTask {
	task := &TimerTask{}
	task.run = func() { f.ran = append(f.ran, ranTask{id, expires, f.now}) }
	f.t.add(task, expires)
	return task
}

func (f *fakeWheel) advance(to int64) {
	f.now = to
	f.t.advance(to)
}

func (f *fakeWheel) levels() int {
	n := 0
	for w := f.t.wheel; w != nil; w = w.overflow.Load() {
		n++
	}
	return n
}

// Tasks run exactly when the clock reaches their expiration, in order, whichever wheel level
// held them.
func TestTimingWheelOrderingMsSteps(t *testing.T) {
	f := newFakeWheel()
	r := rand.New(rand.NewPCG(1, 2))
	const n = 2000
	for i := range n {
		f.add(i, 1+r.Int64N(5000)) // up to three levels: 20ms, 400ms, 8s
	}
	if f.t.size() != n {
		t.Fatalf("size = %d, want %d", f.t.size(), n)
	}
	for now := int64(1); now <= 5000; now++ {
		f.advance(now)
	}
	if len(f.ran) != n || f.t.size() != 0 {
		t.Fatalf("ran %d, size %d; want %d, 0", len(f.ran), f.t.size(), n)
	}
	for i, rt := range f.ran {
		if rt.at != rt.expires {
			t.Fatalf("task %d expiring at %d ran at %d", rt.id, rt.expires, rt.at)
		}
		if i > 0 && f.ran[i-1].expires > rt.expires {
			t.Fatalf("out of order: %v before %v", f.ran[i-1], rt)
		}
	}
}

// Delays from 1ms to days cross every overflow wheel; the clock jumps straight to each
// deadline (as the reaper does), and each task runs at its deadline, not one ms before.
func TestTimingWheelOverflowJumps(t *testing.T) {
	delays := []int64{
		1, 2, 19, 20, 21, 399, 400, 401, 7_999, 8_000, 8_001, 159_999, 160_000,
		3_200_000, 3_600_000, 7_200_001, 64_000_000, 86_400_000, 7 * 86_400_000,
	}
	f := newFakeWheel()
	start := int64(12_345) // not aligned to any wheel
	f.advance(start)
	// The wheel only moves with due buckets; put it at start with a task due then.
	f.add(-1, start)
	f.add(-2, start+1)
	f.advance(start + 1)
	base := f.now
	for i, d := range delays {
		f.add(i, base+d)
	}
	if got := f.levels(); got < 7 {
		t.Fatalf("wheel levels = %d, want >= 7 for a 7-day delay", got)
	}
	f.ran = nil
	for i, d := range delays {
		exp := base + d
		f.advance(exp - 1)
		if len(f.ran) != i {
			t.Fatalf("at %d (1ms before delay %d): ran %v", exp-1, d, f.ran)
		}
		f.advance(exp)
		if len(f.ran) != i+1 || f.ran[i].id != i || f.ran[i].at != exp {
			t.Fatalf("delay %d: ran %v", d, f.ran)
		}
	}
	if f.t.size() != 0 {
		t.Fatalf("size = %d", f.t.size())
	}
}

func TestTimingWheelCancel(t *testing.T) {
	f := newFakeWheel()
	var tasks []*TimerTask
	for i := range 100 {
		tasks = append(tasks, f.add(i, int64(1+i*50))) // spread over three levels
	}
	for i, task := range tasks {
		if i%2 == 0 {
			task.Cancel()
			task.Cancel() // idempotent
		}
	}
	if f.t.size() != 50 {
		t.Fatalf("size after cancelling half = %d, want 50", f.t.size())
	}
	f.advance(10_000)
	if len(f.ran) != 50 {
		t.Fatalf("ran %d, want 50", len(f.ran))
	}
	for _, rt := range f.ran {
		if rt.id%2 == 0 {
			t.Fatalf("cancelled task %d ran", rt.id)
		}
	}
}

// Cancelling a task while the clock moves it between wheel levels never loses or double-runs.
func TestTimingWheelCancelDuringAdvance(t *testing.T) {
	var mu sync.Mutex
	ran := map[int]int{}
	w := newWheelTimer(1, 20, 0, func(task *TimerTask) { task.run() })
	const n = 5000
	tasks := make([]*TimerTask, n)
	for i := range tasks {
		tasks[i] = &TimerTask{run: func() { mu.Lock(); ran[i]++; mu.Unlock() }}
		w.add(tasks[i], int64(1+i%3000))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for now := int64(0); now <= 3001; now++ {
			w.advance(now)
		}
	})
	for i := 0; i < n; i += 3 {
		tasks[i].Cancel()
	}
	wg.Wait()
	for i, c := range ran {
		if c != 1 {
			t.Fatalf("task %d ran %d times", i, c)
		}
	}
	if w.size() != 0 {
		t.Fatalf("size = %d", w.size())
	}
}

func TestTimingWheelAlreadyDue(t *testing.T) {
	f := newFakeWheel()
	f.add(0, 100)
	f.advance(100) // the wheel's time moves with due buckets only (as Kafka's)
	f.add(1, 100)  // current tick: due now, run by add
	f.add(2, 50)   // in the past
	if len(f.ran) != 3 || f.t.size() != 0 {
		t.Fatalf("ran %v size %d; want all run", f.ran, f.t.size())
	}
	// While the wheel lags the clock (no bucket was due for a while), an overdue task lands
	// in a bucket that the next advance finds due at once.
	f.advance(1_000)
	f.add(3, 900)
	if f.t.size() != 1 {
		t.Fatalf("size = %d", f.t.size())
	}
	f.advance(1_000)
	if len(f.ran) != 4 || f.ran[3].at != 1_000 {
		t.Fatalf("ran %v", f.ran)
	}
}

// SystemTimer on the virtual clock: every task runs at its deadline rounded up to the tick,
// never before.
func TestSystemTimerSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewSystemTimer(TimerOptions{})
		defer st.Close()
		start := time.Now()
		delays := []time.Duration{
			0, time.Millisecond, 1500 * time.Microsecond, 19 * time.Millisecond,
			21 * time.Millisecond, 401 * time.Millisecond, 8 * time.Second, time.Minute,
			time.Hour, 25 * time.Hour,
		}
		var mu sync.Mutex
		var got []time.Duration
		for _, d := range slices.Backward(delays) {
			st.Add(NewTimerTask(d, func() {
				mu.Lock()
				got = append(got, time.Since(start))
				mu.Unlock()
			}))
		}
		time.Sleep(26 * time.Hour)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []time.Duration{
			0, time.Millisecond, 2 * time.Millisecond, 19 * time.Millisecond,
			21 * time.Millisecond, 401 * time.Millisecond, 8 * time.Second, time.Minute,
			time.Hour, 25 * time.Hour,
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ran at %v\nwant     %v", got, want)
		}
		if st.Size() != 0 {
			t.Fatalf("Size = %d", st.Size())
		}
	})
}

// A task added while the reaper sleeps towards a later deadline wakes it.
func TestSystemTimerEarlierTaskWakesReaper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewSystemTimer(TimerOptions{})
		defer st.Close()
		start := time.Now()
		st.Add(NewTimerTask(time.Hour, func() {}))
		time.Sleep(10 * time.Millisecond)
		synctest.Wait() // the reaper sleeps
		var at time.Duration
		done := make(chan struct{})
		st.Add(NewTimerTask(5*time.Millisecond, func() { at = time.Since(start); close(done) }))
		<-done
		if at != 15*time.Millisecond {
			t.Fatalf("ran at %v, want 15ms", at)
		}
	})
}

func TestSystemTimerCloseNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		st := NewSystemTimer(TimerOptions{Workers: 4})
		for i := range 50 {
			st.Add(NewTimerTask(time.Duration(i)*time.Millisecond, func() {}))
		}
		st.Close()
		st.Close()
		st.Add(NewTimerTask(0, func() { t.Error("ran after Close") }))
	}
	waitGoroutines(t, before)
}
