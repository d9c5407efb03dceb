package queue

import "time"

// SchedulerStats is what one scheduler of this node has done since it
// started.
type SchedulerStats struct {
	Name          string
	LastRunAt     *time.Time // end of the last tick, failed or not; nil before the first
	LastSuccessAt *time.Time // end of the last successful tick
	Runs          int64      // ticks run, failed ones included
	Failures      int64      // ticks that failed or panicked
}

// SchedulerStats returns the node's schedulers, by name. Safe to call at
// any time, from any goroutine.
func (s *Service) SchedulerStats() []SchedulerStats {
	runs := s.metrics.Schedulers.Snapshot()
	out := make([]SchedulerStats, len(runs))
	for i, r := range runs {
		out[i] = SchedulerStats{Name: r.Name, LastRunAt: r.LastRunAt, LastSuccessAt: r.LastSuccessAt, Runs: r.Runs, Failures: r.Failures}
	}
	return out
}
