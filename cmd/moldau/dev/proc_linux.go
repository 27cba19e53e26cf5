package dev

import "syscall"

// childAttrs: a node dies with the dev process (even on its SIGKILL), and
// runs in its own process group, so a Ctrl-C in the terminal reaches only
// `moldau dev`, which then stops the nodes itself.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
