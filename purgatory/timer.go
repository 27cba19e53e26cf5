package purgatory

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// This file is Kafka's hierarchical timing wheel (org.apache.kafka.server.util.timer:
// TimerTask, TimerTaskEntry, TimerTaskList, TimingWheel and the clock-independent part of
// SystemTimer). It has no goroutine and no clock: wheelTimer.add and wheelTimer.advance take
// times as int64 in an abstract unit, so the wheel is unit-tested with plain integers.
// SystemTimer (system_timer.go) uses nanoseconds since its start and drives the wheel from a
// goroutine.
//
// Lock order inside the timer (a lock on the left may be held while taking one on its right,
// never the reverse):
//
//	wheelTimer.mu (read: add, write: advance) → TimerTask.mu → timerTaskList.mu
//
// flush calls back without holding the bucket lock, so no two bucket locks are ever nested.

// TimerTask is something to run once at a deadline on a SystemTimer. A task is added at most
// once; Cancel removes it from the timer so it neither runs nor occupies memory there.
type TimerTask struct {
	delay time.Duration
	run   func()

	mu    sync.Mutex
	entry *timerTaskEntry // guarded by mu; nil when not scheduled or cancelled
}

// NewTimerTask returns a task that runs fn once delay after it is added to a SystemTimer.
func NewTimerTask(delay time.Duration, fn func()) *TimerTask {
	return &TimerTask{delay: delay, run: fn}
}

// Delay is the delay from the moment the task is added to when it runs.
func (t *TimerTask) Delay() time.Duration { return t.delay }

// Cancel removes the task from its timer. A task already handed to the expiration workers
// still runs; Cancel is a no-op on a task that was never added. Safe for concurrent use.
func (t *TimerTask) Cancel() {
	t.mu.Lock()
	if t.entry != nil {
		t.entry.remove()
		t.entry = nil
	}
	t.mu.Unlock()
}

// setEntry binds the task to its (new) timer entry, removing any previous one.
func (t *TimerTask) setEntry(e *timerTaskEntry) {
	t.mu.Lock()
	if t.entry != nil && t.entry != e {
		t.entry.remove()
	}
	t.entry = e
	t.mu.Unlock()
}

func (t *TimerTask) currentEntry() *timerTaskEntry {
	t.mu.Lock()
	e := t.entry
	t.mu.Unlock()
	return e
}

// timerTaskEntry is one scheduling of a task: a node of a bucket's doubly linked list.
type timerTaskEntry struct {
	task       *TimerTask
	expiration int64

	list       atomic.Pointer[timerTaskList] // the bucket holding the entry, or nil
	next, prev *timerTaskEntry               // guarded by list.mu
}

func newTimerTaskEntry(task *TimerTask, expiration int64) *timerTaskEntry {
	e := &timerTaskEntry{task: task, expiration: expiration}
	task.setEntry(e)
	return e
}

// cancelled reports whether the task was cancelled (or rescheduled) after this entry was made.
func (e *timerTaskEntry) cancelled() bool { return e.task.currentEntry() != e }

// remove unlinks the entry from whatever bucket holds it. The loop covers a concurrent flush
// moving the entry from one bucket to another.
func (e *timerTaskEntry) remove() {
	for l := e.list.Load(); l != nil; l = e.list.Load() {
		l.remove(e)
	}
}

// timerTaskList is a bucket of the wheel: a circular doubly linked list of entries with a
// common (tick-aligned) expiration. It is in the delay queue while its expiration is set.
type timerTaskList struct {
	mu         sync.Mutex
	root       timerTaskEntry // sentinel
	expiration atomic.Int64   // -1 when not queued
	counter    *atomic.Int64  // the timer's task count
}

func newTimerTaskList(counter *atomic.Int64) *timerTaskList {
	l := &timerTaskList{counter: counter}
	l.root.next, l.root.prev = &l.root, &l.root
	l.expiration.Store(-1)
	return l
}

// setExpiration sets the bucket's expiration and reports whether it changed, in which case
// the caller must (re)insert the bucket into the delay queue.
func (l *timerTaskList) setExpiration(ms int64) bool { return l.expiration.Swap(ms) != ms }

func (l *timerTaskList) add(e *timerTaskEntry) {
	e.remove() // in case it is somewhere else
	l.mu.Lock()
	if e.list.Load() == nil {
		tail := l.root.prev
		e.next, e.prev = &l.root, tail
		tail.next = e
		l.root.prev = e
		e.list.Store(l)
		l.counter.Add(1)
	}
	l.mu.Unlock()
}

func (l *timerTaskList) remove(e *timerTaskEntry) {
	l.mu.Lock()
	if e.list.Load() == l {
		e.next.prev = e.prev
		e.prev.next = e.next
		e.next, e.prev = nil, nil
		e.list.Store(nil)
		l.counter.Add(-1)
	}
	l.mu.Unlock()
}

// flush detaches every entry and resets the bucket's expiration; the caller re-adds each
// entry (to a finer wheel, or runs it if due). Unlike Kafka, f is called without the bucket
// lock held, so no two bucket locks are ever nested.
func (l *timerTaskList) flush(f func(*timerTaskEntry)) {
	l.mu.Lock()
	var head *timerTaskEntry
	n := int64(0)
	for e := l.root.next; e != &l.root; {
		next := e.next
		e.list.Store(nil)
		e.prev = nil
		e.next = head // reuse next as a singly linked detached chain, in reverse order
		head = e
		n++
		e = next
	}
	l.root.next, l.root.prev = &l.root, &l.root
	l.counter.Add(-n)
	l.expiration.Store(-1)
	l.mu.Unlock()
	// Restore insertion order so that equal deadlines run first-in first-out.
	var fifo *timerTaskEntry
	for e := head; e != nil; {
		next := e.next
		e.next = fifo
		fifo = e
		e = next
	}
	for e := fifo; e != nil; {
		next := e.next
		e.next = nil
		f(e)
		e = next
	}
}

// timingWheel is one level of the hierarchical wheel (Kafka's TimingWheel): wheelSize buckets
// of tick each, covering [currentTime, currentTime+interval). Deadlines beyond go to the
// overflow wheel, whose tick is this wheel's interval, created on demand.
type timingWheel struct {
	tick        int64
	wheelSize   int64
	interval    int64
	buckets     []*timerTaskList
	currentTime int64 // multiple of tick; written only under wheelTimer.mu (write)
	counter     *atomic.Int64
	queue       *delayQueue
	overflow    atomic.Pointer[timingWheel]
	overflowMu  sync.Mutex
}

func newTimingWheel(tick, wheelSize, start int64, counter *atomic.Int64, q *delayQueue) *timingWheel {
	w := &timingWheel{
		tick:        tick,
		wheelSize:   wheelSize,
		interval:    tick * wheelSize,
		buckets:     make([]*timerTaskList, wheelSize),
		currentTime: start - start%tick,
		counter:     counter,
		queue:       q,
	}
	for i := range w.buckets {
		w.buckets[i] = newTimerTaskList(counter)
	}
	return w
}

func (w *timingWheel) overflowWheel() *timingWheel {
	if o := w.overflow.Load(); o != nil {
		return o
	}
	w.overflowMu.Lock()
	defer w.overflowMu.Unlock()
	if o := w.overflow.Load(); o != nil {
		return o
	}
	o := newTimingWheel(w.interval, w.wheelSize, w.currentTime, w.counter, w.queue)
	w.overflow.Store(o)
	return o
}

// add places the entry in the right bucket and reports true, or reports false if the entry
// is cancelled or already due (then the caller runs it).
func (w *timingWheel) add(e *timerTaskEntry) bool {
	exp := e.expiration
	switch {
	case e.cancelled():
		return false
	case exp < w.currentTime+w.tick:
		return false // already expired
	case exp < w.currentTime+w.interval:
		virtualID := exp / w.tick
		b := w.buckets[virtualID%w.wheelSize]
		b.add(e)
		// The bucket expiration changes only once the bucket was flushed, i.e. is out of the
		// queue, so each bucket is queued at most once per expiration.
		if b.setExpiration(virtualID * w.tick) {
			w.queue.offer(b)
		}
		return true
	default:
		return w.overflowWheel().add(e)
	}
}

// advanceClock moves the wheel (and its overflow wheels) to now, rounded down to a tick.
func (w *timingWheel) advanceClock(now int64) {
	if now >= w.currentTime+w.tick {
		w.currentTime = now - now%w.tick
		if o := w.overflow.Load(); o != nil {
			o.advanceClock(w.currentTime)
		}
	}
}

// delayQueue orders queued buckets by expiration (Kafka uses java.util.concurrent.DelayQueue).
// wake receives a token whenever a bucket becomes the new head, so a waiter recomputes its
// sleep.
type delayQueue struct {
	mu   sync.Mutex
	h    bucketHeap
	wake chan struct{}
}

type queuedBucket struct {
	expiration int64
	list       *timerTaskList
}

type bucketHeap []queuedBucket

func (h bucketHeap) Len() int           { return len(h) }
func (h bucketHeap) Less(i, j int) bool { return h[i].expiration < h[j].expiration }
func (h bucketHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *bucketHeap) Push(x any)        { *h = append(*h, x.(queuedBucket)) }
func (h *bucketHeap) Pop() any {
	old := *h
	n := len(old) - 1
	x := old[n]
	old[n] = queuedBucket{}
	*h = old[:n]
	return x
}

func newDelayQueue() *delayQueue { return &delayQueue{wake: make(chan struct{}, 1)} }

func (q *delayQueue) offer(l *timerTaskList) {
	exp := l.expiration.Load()
	q.mu.Lock()
	heap.Push(&q.h, queuedBucket{expiration: exp, list: l})
	isHead := q.h[0].list == l
	q.mu.Unlock()
	if isHead {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// poll removes and returns the earliest bucket if it expires at or before now.
func (q *delayQueue) poll(now int64) *timerTaskList {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 || q.h[0].expiration > now {
		return nil
	}
	return heap.Pop(&q.h).(queuedBucket).list
}

// next returns the earliest queued expiration, or false if the queue is empty.
func (q *delayQueue) next() (int64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 {
		return 0, false
	}
	return q.h[0].expiration, true
}

// wheelTimer is the clock-free core of Kafka's SystemTimer: add and advance take the current
// time; due tasks are handed to run, which must not block for long.
type wheelTimer struct {
	mu      sync.RWMutex // read: add; write: advance
	wheel   *timingWheel
	queue   *delayQueue
	counter atomic.Int64
	run     func(*TimerTask)
}

func newWheelTimer(tick, wheelSize, start int64, run func(*TimerTask)) *wheelTimer {
	t := &wheelTimer{queue: newDelayQueue(), run: run}
	t.wheel = newTimingWheel(tick, wheelSize, start, &t.counter, t.queue)
	return t
}

// add schedules task to run at expiration (absolute, in the timer's unit).
func (t *wheelTimer) add(task *TimerTask, expiration int64) {
	t.mu.RLock()
	t.addEntry(newTimerTaskEntry(task, expiration))
	t.mu.RUnlock()
}

func (t *wheelTimer) addEntry(e *timerTaskEntry) {
	if !t.wheel.add(e) && !e.cancelled() {
		t.run(e.task) // already due
	}
}

// advance runs (hands to run) every task due at now and reports whether any bucket expired.
func (t *wheelTimer) advance(now int64) bool {
	b := t.queue.poll(now)
	if b == nil {
		return false
	}
	t.mu.Lock()
	for ; b != nil; b = t.queue.poll(now) {
		t.wheel.advanceClock(b.expiration.Load())
		b.flush(t.addEntry)
	}
	t.mu.Unlock()
	return true
}

// size is the number of scheduled (not yet due, not cancelled) tasks.
func (t *wheelTimer) size() int { return int(t.counter.Load()) }
