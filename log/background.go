package log

import (
	"sync"
	"time"
)

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
