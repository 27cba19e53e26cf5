//go:build !linux

package main

import "time"

// processCPU is unmeasured off Linux: bench reports 0.
func processCPU() (user, sys time.Duration) { return 0, 0 }

// threadCPU is unmeasured off Linux.
func threadCPU() (user, sys time.Duration, ok bool) { return 0, 0, false }
