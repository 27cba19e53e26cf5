//go:build unix

package log

import "syscall"

// openFileLimit is the process's soft RLIMIT_NOFILE (what ulimit -n
// shows; Go raises the soft limit to the hard one at start-up).
func openFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return rl.Cur, true
}
