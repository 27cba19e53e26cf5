package purgatory

import (
	"sync"
	"sync/atomic"
	"time"
)

// DelayedOperation is an operation that waits for a condition or a deadline (Kafka's
// DelayedOperation). Implementations embed Operation, call Init before handing the operation
// to a Purgatory, and use pointer receivers:
//
//	type DelayedFetch struct {
//		purgatory.Operation
//		...
//	}
//
// The unexported method makes embedding Operation the only way to implement the interface.
type DelayedOperation interface {
	// TryComplete checks whether the operation can complete now; if so it calls
	// ForceComplete and returns its result. The purgatory calls it with the operation's lock
	// held, so calls for one operation are serialized; it may still be called after the
	// operation expired (ForceComplete then returns false). It must not block for long and
	// must not call back into the purgatory for a key the operation is watched on.
	TryComplete() bool
	// OnComplete runs exactly once, when the operation completes: condition met, forced, or
	// expired. It runs on the goroutine that completed the operation: a caller of
	// TryCompleteElseWatch or CheckAndComplete, a caller of ForceComplete, or an expiration
	// worker. It runs under the operation's lock only when reached through TryComplete.
	OnComplete()
	// OnExpiration runs when the deadline passes, just before OnComplete, on an expiration
	// worker and without the operation's lock (Kafka calls onComplete first, then
	// onExpiration; Moldau reverses them so OnComplete can see that the operation expired).
	OnExpiration()

	operation() *Operation
}

// Operation is the state every DelayedOperation embeds: the completion flag, the lock that
// serializes TryComplete, and the timeout's timer task. Its zero value is not ready: call
// Init or InitWithLock first. An Operation must not be copied after Init.
type Operation struct {
	self      DelayedOperation
	timeout   time.Duration
	completed atomic.Bool
	lock      sync.Locker
	mu        sync.Mutex // lock, unless a shared lock was given
	task      TimerTask
}

// Init prepares the operation: self is the DelayedOperation embedding o, timeout the delay
// after which it expires once handed to TryCompleteElseWatch. TryComplete calls are serialized
// by a lock private to this operation.
func (o *Operation) Init(self DelayedOperation, timeout time.Duration) {
	o.InitWithLock(self, timeout, nil)
}

// InitWithLock is Init with a lock shared with other operations or with the caller's state
// (Kafka's lockOpt), e.g. a consumer group's lock for DelayedJoin. A nil lock means a private
// one. Go locks are not reentrant: never call TryCompleteElseWatch or CheckAndComplete while
// holding the shared lock.
func (o *Operation) InitWithLock(self DelayedOperation, timeout time.Duration, lock sync.Locker) {
	if self == nil || self.operation() != o {
		panic("purgatory: Operation.Init: self must be the DelayedOperation embedding this Operation")
	}
	o.self = self
	o.timeout = timeout
	o.lock = lock
	if o.lock == nil {
		o.lock = &o.mu
	}
	o.task.delay = timeout
	o.task.run = o.expire
}

func (o *Operation) operation() *Operation { return o }

// Timeout is the delay given to Init.
func (o *Operation) Timeout() time.Duration { return o.timeout }

// IsCompleted reports whether the operation has completed.
func (o *Operation) IsCompleted() bool { return o.completed.Load() }

// ForceComplete completes the operation if it has not completed yet: it cancels the timeout
// and calls OnComplete. It returns true only for the one caller (among ForceComplete, TryComplete
// and expiry) that completed the operation. Safe for concurrent use.
func (o *Operation) ForceComplete() bool {
	if !o.completed.CompareAndSwap(false, true) {
		return false
	}
	o.task.Cancel()
	o.self.OnComplete()
	return true
}

// expire is the timer task: OnExpiration then OnComplete, unless already completed.
func (o *Operation) expire() {
	if !o.completed.CompareAndSwap(false, true) {
		return
	}
	o.task.Cancel()
	o.self.OnExpiration()
	o.self.OnComplete()
}

func (o *Operation) mustBeInitialized() {
	if o.self == nil {
		panic("purgatory: DelayedOperation used before Operation.Init")
	}
}

// safeTryComplete is TryComplete under the operation's lock; false if already completed.
func (o *Operation) safeTryComplete() bool {
	o.lock.Lock()
	defer o.lock.Unlock()
	if o.completed.Load() {
		return false
	}
	return o.self.TryComplete()
}
