package dev

import (
	"sync"
	"time"
)

// maxEvents bounds the event log kept in memory (the oldest go first).
const maxEvents = 10000

// Event is one thing that happened, in time order: a fault, a node
// starting or exiting, a leader or ISR change or a controller change seen
// in Metadata, a rebalance, a transaction's outcome, an anomaly found by a
// check.
type Event struct {
	Seq  int64          `json:"seq"`
	Time time.Time      `json:"time"`
	Kind string         `json:"kind"` // fault, node, leader, isr, controller, rebalance, txn, anomaly, traffic, action
	Text string         `json:"text"`
	Data map[string]any `json:"data,omitempty"`
}

// EventLog is the run's events, safe for concurrent use.
type EventLog struct {
	mu      sync.Mutex
	seq     int64
	events  []Event
	dropped int64
}

// Add appends an event now.
func (l *EventLog) Add(kind, text string, data map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	l.events = append(l.events, Event{Seq: l.seq, Time: time.Now().UTC(), Kind: kind, Text: text, Data: data})
	if len(l.events) > maxEvents {
		n := len(l.events) - maxEvents
		l.dropped += int64(n)
		l.events = append(l.events[:0:0], l.events[n:]...)
	}
}

// Since returns the events after seq, oldest first, and how many older
// ones were dropped from memory.
func (l *EventLog) Since(seq int64) ([]Event, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, e := range l.events {
		if e.Seq > seq {
			out = append(out, e)
		}
	}
	return out, l.dropped
}
