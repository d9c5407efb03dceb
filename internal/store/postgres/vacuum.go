package postgres

import (
	"context"

	"github.com/docket-dev/docket/internal/store"
)

// Every claim leaves a dead row version in task_queue and every finish
// deletes a row, so under load the live table turns over its whole content
// many times a second. Autovacuum looks at a table at most once per
// autovacuum_naptime (one minute by default, server-wide: a table's
// storage parameters cannot shorten it), and measured under continuous
// load that let task_queue grow to 11,000 heap pages and 19,000 index
// pages for 5,000 live rows: more than PostgreSQL's default buffer cache,
// so every claim and finish read and evicted pages and the throughput
// fell minute by minute. Each Docket node therefore vacuums the live table
// itself once enough of it has died, as an autovacuum with a short naptime
// would, and the table with its indexes stays inside the cache
// (BENCHMARKS.md, continuous runs E and F). The queue's vacuum scheduler
// (queue.VacuumScheduler) calls Vacuum; the backend runs no loop of its
// own.

// needsVacuumSQL says whether task_queue needs a vacuum: at least $2 dead
// rows in the statistics (every backend's changes, reported within a
// second of their commit), and no vacuum, by any node, within the last $1
// seconds, so that several nodes together vacuum about as often as one.
const needsVacuumSQL = `SELECT coalesce(n_dead_tup, 0) >= $2
	AND coalesce(greatest(last_vacuum, last_autovacuum), '-infinity') < now() - make_interval(secs => $1)
	FROM pg_stat_user_tables WHERE relid = 'task_queue'::regclass`

// vacuumSQL vacuums the live table. SKIP_LOCKED: when another node or
// autovacuum is already at it, there is nothing to add. TRUNCATE false: the
// tail pages a vacuum frees are refilled within the second, and giving
// them back would take an exclusive lock that stops every claim and finish
// while it is held.
const vacuumSQL = `VACUUM (SKIP_LOCKED, TRUNCATE false) task_queue`

var _ store.Vacuumer = (*Backend)(nil)

// Vacuum vacuums task_queue when enough of it is dead and no node has
// vacuumed it within p.Quiet (see store.Vacuumer).
func (b *Backend) Vacuum(ctx context.Context, p *store.VacuumParams) (bool, error) {
	var due bool
	if err := b.pool.QueryRow(ctx, needsVacuumSQL, p.Quiet.Seconds(), p.MinDead).Scan(&due); err != nil || !due {
		return false, interpretError("vacuum", err)
	}
	if _, err := b.pool.Exec(ctx, vacuumSQL); err != nil {
		return false, interpretError("vacuum", err)
	}
	return true, nil
}
