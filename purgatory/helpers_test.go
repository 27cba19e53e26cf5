package purgatory

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testOp is a DelayedOperation whose condition is a flag.
type testOp struct {
	Operation
	ready atomic.Bool

	tries       atomic.Int64
	completions atomic.Int64
	expirations atomic.Int64

	mu            sync.Mutex
	events        []string  // "expire", "complete"
	completedAt   time.Time // time.Now() in OnComplete
	expiredFirst  bool      // OnExpiration ran before OnComplete
	completedOnce chan struct{}
}

func newTestOp(timeout time.Duration) *testOp {
	op := &testOp{completedOnce: make(chan struct{})}
	op.Init(op, timeout)
	return op
}

func (op *testOp) TryComplete() bool {
	op.tries.Add(1)
	if op.ready.Load() {
		return op.ForceComplete()
	}
	return false
}

func (op *testOp) OnExpiration() {
	op.expirations.Add(1)
	op.mu.Lock()
	op.events = append(op.events, "expire")
	op.mu.Unlock()
}

func (op *testOp) OnComplete() {
	n := op.completions.Add(1)
	op.mu.Lock()
	op.events = append(op.events, "complete")
	op.completedAt = time.Now()
	op.expiredFirst = len(op.events) == 2 && op.events[0] == "expire"
	op.mu.Unlock()
	if n == 1 {
		close(op.completedOnce)
	}
}

func (op *testOp) eventLog() []string {
	op.mu.Lock()
	defer op.mu.Unlock()
	return append([]string(nil), op.events...)
}

// waitGoroutines polls runtime.NumGoroutine until it is at most want (goleak is not available).
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, want <= %d\n%s", n, want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
