//go:build unix && !linux

package faultcheck

import "syscall"

func childProcAttr() *syscall.SysProcAttr { return nil }
