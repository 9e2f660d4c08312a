//go:build !linux

package loadtest

import "syscall"

// childAttr puts a child in its own process group, so that a Ctrl-C
// reaches only the harness, which stops its children in order. (The
// measurements themselves read /proc and need Linux.)
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
