// Package runtimetest has test doubles for coordinators built on package
// runtime: MemLog, an in-memory runtime.PartitionLog.
package runtimetest

import (
	"sync"
	"time"

	"github.com/moldau/moldau/log"
)

// MemLog is an in-memory runtime.PartitionLog: every partition is a list
// of batches; an append is committed at once unless Hold is set, and
// FailWith makes appends fail. Safe for concurrent use.
type MemLog struct {
	mu      sync.Mutex
	batches map[log.TopicPartition][][]byte
	end     map[log.TopicPartition]int64
	hold    bool
	held    []func()
	fail    error
}

// NewMemLog returns an empty MemLog.
func NewMemLog() *MemLog {
	return &MemLog{batches: map[log.TopicPartition][][]byte{}, end: map[log.TopicPartition]int64{}}
}

// AppendAsCoordinator implements runtime.PartitionLog.
func (l *MemLog) AppendAsCoordinator(tp log.TopicPartition, batch []byte, _ time.Duration, done func(int64, error)) {
	l.mu.Lock()
	if l.fail != nil {
		err := l.fail
		l.mu.Unlock()
		done(-1, err)
		return
	}
	h, err := log.CheckBatch(batch)
	if err != nil {
		l.mu.Unlock()
		done(-1, err)
		return
	}
	base := l.end[tp]
	b := append([]byte(nil), batch...)
	log.SetBaseOffset(b, base)
	l.batches[tp] = append(l.batches[tp], b)
	l.end[tp] = base + int64(h.LastOffsetDelta) + 1
	if l.hold {
		l.held = append(l.held, func() { done(base, nil) })
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	done(base, nil)
}

// ReadForCoordinator implements runtime.PartitionLog.
func (l *MemLog) ReadForCoordinator(tp log.TopicPartition, offset int64, maxBytes int32) ([]byte, int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for _, b := range l.batches[tp] {
		h, _ := log.ParseBatchHeader(b)
		if h.LastOffset() < offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > int(maxBytes) {
			break
		}
		out = append(out, b...)
	}
	return out, 0, l.end[tp], nil
}

// Hold makes appends wait for Release before they are committed.
func (l *MemLog) Hold() {
	l.mu.Lock()
	l.hold = true
	l.mu.Unlock()
}

// Release commits the held appends and stops holding.
func (l *MemLog) Release() {
	l.mu.Lock()
	held := l.held
	l.held, l.hold = nil, false
	l.mu.Unlock()
	for _, f := range held {
		f()
	}
}

// FailWith makes every append fail with err (nil: succeed again).
func (l *MemLog) FailWith(err error) {
	l.mu.Lock()
	l.fail = err
	l.mu.Unlock()
}

// Batches returns a copy of tp's batches, with their assigned offsets.
func (l *MemLog) Batches(tp log.TopicPartition) [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([][]byte, len(l.batches[tp]))
	for i, b := range l.batches[tp] {
		out[i] = append([]byte(nil), b...)
	}
	return out
}
