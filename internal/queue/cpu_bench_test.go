package queue

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cpuUse is the CPU time used so far by this process and by the local
// PostgreSQL server's processes (its backends and, once they exit, the
// postmaster's count of its children), in seconds. A benchmark reports the
// difference over its drain: on a machine whose cores the queue and the
// database share, the work per task is what decides the throughput. pg is
// 0 when no PostgreSQL process can be read (a server on another machine).
func cpuUse() (self, pg float64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		self = float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || s[open+1:end] != "postgres" || end+2 > len(s) {
			continue
		}
		// Fields 14-17 of proc(5): utime, stime, cutime, cstime, in ticks.
		f := strings.Fields(s[end+2:])
		if len(f) < 15 {
			continue
		}
		for _, v := range f[11:15] {
			n, _ := strconv.ParseFloat(v, 64)
			pg += n / 100
		}
	}
	return self, pg
}
