//go:build unix

package queue

import "syscall"

// cpuSeconds is the CPU time this process has used so far (user and
// system). Benchmarks report its difference over a drain, per task: on a
// machine whose cores the nodes and the database share, the work per task
// decides the throughput, and it varies less between runs than the time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
