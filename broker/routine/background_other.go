//go:build !linux

package routine

import "runtime"

// LowerThreadPriority locks the calling goroutine to its OS thread; on
// this system the nice value is per process, so the priority stays.
func LowerThreadPriority(int) error {
	runtime.LockOSThread()
	return nil
}
