//go:build !linux

package routine

// lowerThreadPriority does nothing where threads have no priority of
// their own that Moldau can set.
func lowerThreadPriority() {}
