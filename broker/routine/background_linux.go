package routine

import "syscall"

// lowerThreadPriority sets the calling thread's nice value to
// BackgroundNice (Linux's setpriority applies to one thread when given a
// thread id). Failing is harmless: the work runs at normal priority.
func lowerThreadPriority() {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), BackgroundNice)
}
