package runtime

import (
	"sync"
	"time"

	"github.com/moldau/moldau/purgatory"
)

// TimerOp is an operation a timer runs on the shard's goroutine when it
// fires; its records are written as those of a Write.
type TimerOp func() (Result[Void], error)

// Timer schedules operations on a shard (Kafka's CoordinatorTimer). Timers
// are keyed: scheduling a key replaces the timer already under it. A
// timer's op runs on the shard's goroutine, only while the shard that
// scheduled it is active, and never after Cancel returned. Timers are
// dropped when the shard is unloaded.
type Timer interface {
	// Schedule runs op after delay, replacing any timer under key.
	Schedule(key string, delay time.Duration, op TimerOp)
	// ScheduleIfAbsent is Schedule unless a timer is under key already.
	ScheduleIfAbsent(key string, delay time.Duration, op TimerOp)
	// Cancel removes the timer under key, if any.
	Cancel(key string)
	// IsScheduled reports whether a timer is under key.
	IsScheduled(key string) bool
}

// shardTimer is a shard's Timer on the runtime's timing wheel (Kafka's
// EventBasedCoordinatorTimer): a firing task queues an event on the shard,
// which runs the op only if the task is still the one under its key.
type shardTimer[S Shard] struct {
	c *shardContext[S]

	mu      sync.Mutex
	entries map[string]*timerEntry // guarded by mu
	dead    bool                   // guarded by mu: cancelAll was called
}

type timerEntry struct {
	task *purgatory.TimerTask
	op   TimerOp
}

func newShardTimer[S Shard](c *shardContext[S]) *shardTimer[S] {
	return &shardTimer[S]{c: c, entries: make(map[string]*timerEntry)}
}

func (t *shardTimer[S]) Schedule(key string, delay time.Duration, op TimerOp) {
	t.schedule(key, delay, op, false)
}

func (t *shardTimer[S]) ScheduleIfAbsent(key string, delay time.Duration, op TimerOp) {
	t.schedule(key, delay, op, true)
}

func (t *shardTimer[S]) schedule(key string, delay time.Duration, op TimerOp, ifAbsent bool) {
	t.mu.Lock()
	if t.dead {
		t.mu.Unlock()
		return
	}
	old := t.entries[key]
	if old != nil && ifAbsent {
		t.mu.Unlock()
		return
	}
	e := &timerEntry{op: op}
	e.task = purgatory.NewTimerTask(delay, func() { t.fire(key, e) })
	t.entries[key] = e
	t.mu.Unlock()
	if old != nil {
		old.task.Cancel()
	}
	t.c.rt.timer.Add(e.task)
}

func (t *shardTimer[S]) Cancel(key string) {
	t.mu.Lock()
	e := t.entries[key]
	delete(t.entries, key)
	t.mu.Unlock()
	if e != nil {
		e.task.Cancel()
	}
}

func (t *shardTimer[S]) IsScheduled(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entries[key] != nil
}

// size is the number of timers scheduled.
func (t *shardTimer[S]) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

func (t *shardTimer[S]) cancelAll() {
	t.mu.Lock()
	entries := t.entries
	t.entries = map[string]*timerEntry{}
	t.dead = true
	t.mu.Unlock()
	for _, e := range entries {
		e.task.Cancel()
	}
}

// fire runs on the timer's expiration goroutine: hand the op to the shard.
func (t *shardTimer[S]) fire(key string, e *timerEntry) {
	c := t.c
	c.enqueue(func() {
		t.mu.Lock()
		current := t.entries[key] == e && !t.dead
		if current {
			delete(t.entries, key)
		}
		t.mu.Unlock()
		if !current || c.timer != t || c.state != StateActive {
			return
		}
		runWrite(c, "timer "+key, func(S) (Result[Void], error) { return e.op() }, func(_ Void, err error) {
			if err != nil {
				c.rt.log.Debug("coordinator timer operation failed", "partition", c.partition, "timer", key, "err", err)
			}
		})
	})
}
