//go:build unix

package config

import "syscall"

// openFileLimit is the process's soft limit on open files (Go raises the
// soft limit to the hard one at start-up on Linux), or 0 if unknown.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}
