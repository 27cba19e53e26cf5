package log

import (
	"sync"
	"time"

	"github.com/moldau/moldau/broker/routine"
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

// bulkDeletes is how many deletions due at once run in the background.
const bulkDeletes = 100

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
	runAll := func() {
		for _, fn := range run {
			fn()
		}
	}
	// Thousands of deletions at once (a deleted topic's logs, due
	// together) run at a low CPU priority, as their creation did.
	if len(run) >= bulkDeletes {
		routine.Background(runAll)
	} else {
		runAll()
	}
	return len(run)
}

func (q *deleteQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.tasks)
}
