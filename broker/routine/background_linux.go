package routine

import (
	"runtime"
	"syscall"
)

// LowerThreadPriority locks the calling goroutine to its OS thread and
// gives that thread the nice value nice (on Linux the nice value is per
// thread), so the goroutine takes the CPU the others leave. The goroutine
// must never unlock: when it returns, the runtime ends the thread rather
// than hand a low-priority thread to other goroutines. Threads the runtime
// starts meanwhile do not inherit the priority: from a locked thread it
// starts them from its template thread. Where threads have no priority of
// their own it only locks.
func LowerThreadPriority(nice int) error {
	runtime.LockOSThread()
	return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice)
}
