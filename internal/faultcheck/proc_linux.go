package faultcheck

import "syscall"

// childProcAttr makes a child server die with the checker (a checker killed
// with SIGKILL leaves no server behind).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
