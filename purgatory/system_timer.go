package purgatory

import (
	"github.com/moldau/moldau/broker/routine"

	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// maxReaperWait bounds how long the reaper sleeps, as Kafka's ExpiredOperationReaper calls
// advanceClock(200ms): the purgatory's purge check runs at least this often.
const maxReaperWait = 200 * time.Millisecond

// TimerOptions configures a SystemTimer. The zero value is Kafka's configuration.
type TimerOptions struct {
	// Now is the clock. Default time.Now. The reaper sleeps with the time package, so Now must
	// move with real time (time.Now, an offset of it, or time inside a testing/synctest bubble,
	// where time.Now and timers are both virtual).
	Now func() time.Time
	// Tick is the resolution of the finest wheel. Default 1ms.
	Tick time.Duration
	// WheelSize is the number of buckets per wheel. Default 20.
	WheelSize int
	// Workers is the number of goroutines running expired tasks. Default 1, as Kafka's
	// SystemTimer executor. Tasks run in deadline order when Workers is 1.
	Workers int
	// Logger receives panics recovered from expired tasks. Default: discard.
	Logger *slog.Logger
}

func (o *TimerOptions) withDefaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Tick <= 0 {
		o.Tick = time.Millisecond
	}
	if o.WheelSize <= 0 {
		o.WheelSize = 20
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// SystemTimer runs TimerTasks at their deadline: Kafka's SystemTimer plus its reaper thread.
//
// One goroutine (the reaper) sleeps until the earliest bucket of the hierarchical timing wheel
// is due, advances the wheel and hands due tasks to Workers expiration goroutines through an
// unbounded FIFO, so a slow task never delays the clock (Kafka: a single-thread executor).
// A task never runs before its deadline; it runs within about a tick of it when the workers
// keep up. Adding and cancelling are O(1) and safe for concurrent use.
type SystemTimer struct {
	now    func() time.Time
	start  time.Time
	tick   int64 // ns
	core   *wheelTimer
	exec   *executor
	onTick func() // run by the reaper after each advance; set before the reaper starts

	closed    atomic.Bool
	done      chan struct{}
	reaper    routine.Group
	closeOnce sync.Once
}

// NewSystemTimer starts a timer. Close stops it.
func NewSystemTimer(opts TimerOptions) *SystemTimer {
	s := newSystemTimer(opts, nil)
	s.startReaper()
	return s
}

// newSystemTimer makes a timer whose reaper runs onTick after each advance; the caller starts
// the reaper with startReaper once onTick can run.

func newSystemTimer(opts TimerOptions, onTick func()) *SystemTimer {
	opts.withDefaults()
	s := &SystemTimer{
		now:    opts.Now,
		start:  opts.Now(),
		tick:   int64(opts.Tick),
		onTick: onTick,
		done:   make(chan struct{}),
	}
	s.exec = newExecutor(opts.Workers, opts.Logger)
	s.core = newWheelTimer(s.tick, int64(opts.WheelSize), 0, s.exec.submit)
	return s
}

func (s *SystemTimer) startReaper() { s.reaper.Go(func(<-chan struct{}) { s.reap() }) }

// elapsed is the timer's current time: nanoseconds since it started.
func (s *SystemTimer) elapsed() int64 { return int64(s.now().Sub(s.start)) }

// Add schedules task to run task.Delay() from now. A task whose delay is zero or negative runs
// on an expiration worker, never on the caller's goroutine. A task is added at most once. After
// Close, Add does nothing.
func (s *SystemTimer) Add(task *TimerTask) {
	if s.closed.Load() {
		return
	}
	// Round the deadline up to a tick, so the task's bucket is never due before the task.
	exp := s.elapsed() + int64(task.delay)
	if r := exp % s.tick; r > 0 {
		exp += s.tick - r
	}
	s.core.add(task, exp)
}

// Size is the number of tasks waiting for their deadline.
func (s *SystemTimer) Size() int { return s.core.size() }

// Close stops the reaper, then lets the workers finish the tasks already due and stops them.
// Tasks not yet due never run. Idempotent; returns when every goroutine has exited.
func (s *SystemTimer) Close() {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.reaper.Stop()
		close(s.done)
		s.reaper.Wait()
		s.exec.close()
	})
}

func (s *SystemTimer) reap() {
	t := time.NewTimer(maxReaperWait)
	defer t.Stop()
	for {
		s.core.advance(s.elapsed())
		if s.onTick != nil {
			s.onTick()
		}
		wait := maxReaperWait
		if next, ok := s.core.queue.next(); ok {
			if d := time.Duration(next - s.elapsed()); d < wait {
				wait = d
			}
		}
		if wait <= 0 {
			select {
			case <-s.done:
				return
			default:
				continue
			}
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-s.core.queue.wake:
		case <-s.done:
			return
		}
	}
}

// executor runs due tasks on a fixed number of goroutines, fed by an unbounded FIFO so that the
// reaper never blocks (Kafka's SystemTimer executor).
type executor struct {
	logger *slog.Logger

	mu    sync.Mutex
	items []*TimerTask
	head  int

	signal chan struct{}
	done   chan struct{}
	g      routine.Group
}

func newExecutor(workers int, logger *slog.Logger) *executor {
	x := &executor{logger: logger, signal: make(chan struct{}, 1), done: make(chan struct{})}
	for range workers {
		x.g.Go(func(<-chan struct{}) { x.work() })
	}
	return x
}

func (x *executor) submit(t *TimerTask) {
	x.mu.Lock()
	x.items = append(x.items, t)
	x.mu.Unlock()
	x.notify()
}

func (x *executor) notify() {
	select {
	case x.signal <- struct{}{}:
	default:
	}
}

func (x *executor) pop() (*TimerTask, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.head == len(x.items) {
		return nil, false
	}
	t := x.items[x.head]
	x.items[x.head] = nil
	x.head++
	switch {
	case x.head == len(x.items):
		x.items, x.head = x.items[:0], 0
	case x.head > 1024 && x.head > len(x.items)/2:
		n := copy(x.items, x.items[x.head:])
		clear(x.items[n:])
		x.items, x.head = x.items[:n], 0
	}
	more := x.head < len(x.items)
	return t, more
}

func (x *executor) work() {
	for {
		t, more := x.pop()
		if t != nil {
			if more {
				x.notify() // wake another worker
			}
			x.run(t)
			continue
		}
		select {
		case <-x.signal:
		case <-x.done:
			for t, _ := x.pop(); t != nil; t, _ = x.pop() {
				x.run(t)
			}
			return
		}
	}
}

// run runs one task. A panic is logged and does not kill the worker, as a Java executor
// survives an exception thrown by a task.
func (x *executor) run(t *TimerTask) {
	defer func() {
		if r := recover(); r != nil {
			x.logger.Error("purgatory: timer task panicked",
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	t.run()
}

func (x *executor) close() {
	x.g.Stop()
	close(x.done)
	x.g.Wait()
}
