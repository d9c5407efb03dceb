package queue

import "github.com/docket-dev/docket/dockettype"

// WorkerStats is one pool's workers on this node.
type WorkerStats struct {
	Pool    dockettype.Pool
	Workers int // configured workers (0: this node runs none)
	Busy    int // workers running a task now
}

// WorkerStats returns each pool's workers and how many are busy, in
// dockettype.Pools order. Safe to call at any time, from any goroutine.
func (s *Service) WorkerStats() []WorkerStats {
	out := make([]WorkerStats, 0, len(dockettype.Pools))
	for _, name := range dockettype.Pools {
		p := s.pools[name]
		p.mu.Lock()
		busy := p.running
		p.mu.Unlock()
		out = append(out, WorkerStats{Pool: name, Workers: p.workers, Busy: busy})
	}
	return out
}
