package loadtest

import "syscall"

// childAttr puts a child in its own process group (a Ctrl-C reaches only
// the harness, which stops its children in order) and has the kernel kill
// it when the harness dies without cleaning up.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
