//go:build unix

package node

import "syscall"

// openFileLimit returns the process's open-file limit (Go raises the soft
// limit to the hard one at start-up).
func openFileLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return uint64(l.Cur), true
}
