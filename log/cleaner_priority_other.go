//go:build !linux

package log

import "log/slog"

// lowerThreadPriority does nothing where the nice value is per process.
func lowerThreadPriority(*slog.Logger) {}
