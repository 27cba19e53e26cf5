//go:build !unix

package log

// openFileLimit is unknown off Unix.
func openFileLimit() (uint64, bool) { return 0, false }
