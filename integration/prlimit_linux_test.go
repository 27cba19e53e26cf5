//go:build linux

package integration

import (
	"syscall"
	"unsafe"
)

// prlimit gets (old) and sets (new, if not nil) the RLIMIT_NOFILE of
// another process (prlimit(2)). Moving the soft limit below the hard one
// needs no privilege.
func prlimit(pid int, new, old *syscall.Rlimit) error {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_NOFILE),
		uintptr(unsafe.Pointer(new)), uintptr(unsafe.Pointer(old)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
