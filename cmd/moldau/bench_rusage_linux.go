package main

import (
	"syscall"
	"time"
)

// processCPU is this process's user and system CPU time (getrusage
// RUSAGE_SELF: every thread).
func processCPU() (user, sys time.Duration) { return rusage(syscall.RUSAGE_SELF) }

// threadCPU is the calling OS thread's user and system CPU time (getrusage
// RUSAGE_THREAD); meaningful only under runtime.LockOSThread. ok is false
// where the platform has no per-thread figure.
func threadCPU() (user, sys time.Duration, ok bool) {
	user, sys = rusage(syscall.RUSAGE_THREAD)
	return user, sys, true
}

func rusage(who int) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
