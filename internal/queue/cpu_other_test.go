//go:build !unix

package queue

// cpuSeconds is 0 where getrusage is not available: the benchmarks then
// report no CPU per task (see cpu_unix_test.go).
func cpuSeconds() float64 { return 0 }
