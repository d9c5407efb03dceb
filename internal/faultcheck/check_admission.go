package faultcheck

import (
	"sort"

	"github.com/docket-dev/docket/dockettype"
)

// checkAdmission replays admissions (and retries, which take a unit like
// an admission) and terminal events of the run's tasks
// in event-ID order and checks that the tasks in flight never exceed the
// pool's capacity or a tenant's limit. The order is the commit order where
// it matters: SQLite has one writer, and on PostgreSQL an admission takes
// its ID after it read the counts under the pool's and tenant's gate locks,
// so every release it counted has a smaller ID. Tasks outside the run are
// not counted, so the check can miss an excess but never invent one.
func checkAdmission(p *parsed, r *Result) {
	type step struct {
		id     int64
		task   *dockettype.Task
		delta  int
		taskID string
	}
	var steps []step
	for id, tv := range p.db {
		for _, ev := range tv.Events {
			switch {
			case ev.From == "" && ev.To == dockettype.StateQueued, isRetry(ev):
				steps = append(steps, step{ev.ID, tv.Task, +1, id})
			case ev.To.Terminal():
				steps = append(steps, step{ev.ID, tv.Task, -1, id})
			}
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].id < steps[j].id })
	lim := p.in.Limits
	inFlight := map[string]int{}
	for _, s := range steps {
		pool := "pool:" + string(s.task.Pool)
		inFlight[pool] += s.delta
		inFlight[s.task.Tenant] += s.delta
		if s.delta < 0 {
			continue
		}
		r.PeakInFlight[pool] = max(r.PeakInFlight[pool], inFlight[pool])
		r.PeakInFlight[s.task.Tenant] = max(r.PeakInFlight[s.task.Tenant], inFlight[s.task.Tenant])
		if c := lim.PoolCapacity; c > 0 && s.task.Pool == dockettype.PoolOnline && inFlight[pool] > c {
			r.flag(AnomalyAdmission, "admitting task %s made %d tasks in flight in pool %s, capacity %d", s.taskID, inFlight[pool], s.task.Pool, c)
		}
		if l := lim.Tenants[s.task.Tenant]; l > 0 && inFlight[s.task.Tenant] > l {
			r.flag(AnomalyAdmission, "admitting task %s made %d tasks of tenant %s in flight, limit %d", s.taskID, inFlight[s.task.Tenant], s.task.Tenant, l)
		}
	}
}
