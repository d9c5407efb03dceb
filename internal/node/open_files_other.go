//go:build !unix

package node

// openFileLimit reports that the open-file limit is not known here.
func openFileLimit() (uint64, bool) { return 0, false }
