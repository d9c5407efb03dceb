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
	s.mu.Lock()
	var pools map[dockettype.Pool]*pool
	if s.run != nil {
		pools = s.run.pools
	}
	s.mu.Unlock()
	out := make([]WorkerStats, 0, len(dockettype.Pools))
	for _, name := range dockettype.Pools {
		ws := WorkerStats{Pool: name, Workers: max(s.cfg.pool(name).Workers, 0)}
		if p := pools[name]; p != nil {
			p.mu.Lock()
			ws.Busy = p.running
			p.mu.Unlock()
		}
		out = append(out, ws)
	}
	return out
}
