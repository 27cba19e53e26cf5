package log

import (
	"sync"
	"time"
)

// background tracks the goroutines of a Manager: Go refuses once Stop has
// begun, and Stop waits for every goroutine (the GoAttach pattern).
type background struct {
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
	done    chan struct{}
}

func newBackground() *background { return &background{done: make(chan struct{})} }

// Go runs fn in a tracked goroutine; fn must return soon after done is
// closed. It reports false if shutdown already began.
func (b *background) Go(fn func(done <-chan struct{})) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn(b.done)
	}()
	return true
}

// Every runs fn every interval until shutdown.
func (b *background) Every(interval time.Duration, fn func()) bool {
	if interval <= 0 {
		return false
	}
	return b.Go(func(done <-chan struct{}) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	})
}

// Stop refuses new goroutines, signals done and waits. Idempotent.
func (b *background) Stop() {
	b.mu.Lock()
	if !b.stopped {
		b.stopped = true
		close(b.done)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// deleteQueue holds file deletions due after file.delete.delay.ms (Kafka
// schedules them on its scheduler). Due times use the injected clock.
type deleteQueue struct {
	mu    sync.Mutex
	tasks []deleteTask
}

type deleteTask struct {
	due time.Time
	fn  func()
}

func (q *deleteQueue) add(due time.Time, fn func()) {
	q.mu.Lock()
	q.tasks = append(q.tasks, deleteTask{due: due, fn: fn})
	q.mu.Unlock()
}

// runDue runs the tasks due at now (all of them if all is set).
func (q *deleteQueue) runDue(now time.Time, all bool) int {
	q.mu.Lock()
	var run []func()
	keep := q.tasks[:0]
	for _, t := range q.tasks {
		if all || !t.due.After(now) {
			run = append(run, t.fn)
		} else {
			keep = append(keep, t)
		}
	}
	q.tasks = keep
	q.mu.Unlock()
	for _, fn := range run {
		fn()
	}
	return len(run)
}

func (q *deleteQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.tasks)
}
