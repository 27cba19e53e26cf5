package runtime

import (
	"sort"
	"time"
)

// MockTimer is a Timer driven by hand, for unit tests of shards (Kafka's
// MockCoordinatorTimer): nothing fires until Advance moves its clock.
// Not safe for concurrent use.
type MockTimer struct {
	now     time.Time
	seq     int
	entries map[string]*mockEntry
}

type mockEntry struct {
	key      string
	deadline time.Time
	seq      int
	op       TimerOp
}

// NewMockTimer returns a MockTimer whose clock starts at start.
func NewMockTimer(start time.Time) *MockTimer {
	return &MockTimer{now: start, entries: map[string]*mockEntry{}}
}

// Now is the timer's clock; pass it as the shard's clock.
func (m *MockTimer) Now() time.Time { return m.now }

func (m *MockTimer) Schedule(key string, delay time.Duration, op TimerOp) {
	m.seq++
	m.entries[key] = &mockEntry{key: key, deadline: m.now.Add(delay), seq: m.seq, op: op}
}

func (m *MockTimer) ScheduleIfAbsent(key string, delay time.Duration, op TimerOp) {
	if m.entries[key] == nil {
		m.Schedule(key, delay, op)
	}
}

func (m *MockTimer) Cancel(key string) { delete(m.entries, key) }

func (m *MockTimer) IsScheduled(key string) bool { return m.entries[key] != nil }

// Deadline returns when the timer under key fires.
func (m *MockTimer) Deadline(key string) (time.Time, bool) {
	e := m.entries[key]
	if e == nil {
		return time.Time{}, false
	}
	return e.deadline, true
}

// Size is the number of timers scheduled.
func (m *MockTimer) Size() int { return len(m.entries) }

// Fired is one timer run by Advance, with what its op returned.
type Fired struct {
	Key    string
	Result Result[Void]
	Err    error
}

// Advance moves the clock by d and runs, in deadline order, every timer
// due by then (including timers scheduled by those it runs). apply, if not
// nil, is called with each op's result right after the op ran, before the
// next timer, as the runtime would write it.
func (m *MockTimer) Advance(d time.Duration, apply func(Fired)) []Fired {
	target := m.now.Add(d)
	var fired []Fired
	for {
		var due []*mockEntry
		for _, e := range m.entries {
			if !e.deadline.After(target) {
				due = append(due, e)
			}
		}
		if len(due) == 0 {
			break
		}
		sort.Slice(due, func(i, j int) bool {
			if !due[i].deadline.Equal(due[j].deadline) {
				return due[i].deadline.Before(due[j].deadline)
			}
			return due[i].seq < due[j].seq
		})
		e := due[0]
		delete(m.entries, e.key)
		if e.deadline.After(m.now) {
			m.now = e.deadline
		}
		res, err := e.op()
		f := Fired{Key: e.key, Result: res, Err: err}
		if apply != nil {
			apply(f)
		}
		fired = append(fired, f)
	}
	m.now = target
	return fired
}
