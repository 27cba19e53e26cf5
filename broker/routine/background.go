package routine

// BackgroundNice is the nice value Background gives its thread: the
// kernel then runs that thread only as much as the others leave it (at
// nice 10 it gets about a tenth of a contended CPU).
const BackgroundNice = 10

// Background runs fn on an OS thread of its own with a lower CPU priority
// (BackgroundNice, see LowerThreadPriority) and returns once fn has. Bulk
// admin work (creating or deleting thousands of logs, mostly system calls)
// runs so, that it never delays the request path on a busy machine: Go's
// scheduler cannot preempt a thread inside a system call, the kernel's
// can.
func Background(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = LowerThreadPriority(BackgroundNice) // failing: normal priority
		fn()
	}()
	<-done
}
