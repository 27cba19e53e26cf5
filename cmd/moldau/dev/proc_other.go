//go:build !linux

package dev

import "syscall"

// childAttrs: elsewhere, the nodes are stopped by `moldau dev` on exit
// only.
func childAttrs() *syscall.SysProcAttr { return nil }
