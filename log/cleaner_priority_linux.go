package log

import (
	"log/slog"
	"runtime"
	"syscall"
)

// cleanerNice is the nice value of the cleaner threads' OS threads.
const cleanerNice = 19

// lowerThreadPriority locks the calling goroutine (a cleaner thread) to
// its OS thread and lowers that thread's CPU priority to nice 19, so the
// cleaner takes the CPU the request path leaves instead of half of it (on
// Linux the nice value is per thread). The goroutine never unlocks: when
// it returns, the runtime ends the thread rather than reuse it. Threads the
// runtime starts meanwhile do not inherit the priority: from a locked
// thread it starts them from its template thread.
func lowerThreadPriority(logger *slog.Logger) {
	runtime.LockOSThread()
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), cleanerNice); err != nil {
		logger.Warn("could not lower the log cleaner thread's CPU priority", "err", err)
	}
}
