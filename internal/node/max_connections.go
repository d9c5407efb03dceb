package node

import "log/slog"

// reservedFiles are the open files kept for the store, logs and the
// listener when MaxConnections is fitted to the open-file limit.
const reservedFiles = 256

// fitMaxConnections lowers the connection cap n so that it leaves
// reservedFiles of the process's open-file limit free, and says so.
func fitMaxConnections(n int, log *slog.Logger) int {
	limit, ok := openFileLimit()
	if !ok || uint64(n)+reservedFiles <= limit {
		return n
	}
	fitted := max(int(limit)-reservedFiles, int(limit/2), 1)
	log.Warn("max connections lowered to fit the open-file limit",
		"max_connections", fitted, "asked", n, "open_file_limit", limit)
	return fitted
}
