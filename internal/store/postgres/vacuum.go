package postgres

import (
	"context"
	"sync"
	"time"
)

// Every claim leaves a dead row version in task_queue and every finish
// deletes a row, so under load the live table turns over its whole content
// many times a second. Autovacuum looks at a table at most once per
// autovacuum_naptime (one minute by default, server-wide: a table's
// storage parameters cannot shorten it), and measured under continuous
// load that let task_queue grow to 11,000 heap pages and 19,000 index
// pages for 5,000 live rows: more than PostgreSQL's default buffer cache,
// so every claim and finish read and evicted pages and the throughput
// fell minute by minute. Each Docket process therefore vacuums the live
// table itself once enough of it has died, as an autovacuum with a short
// naptime would, and the table with its indexes stays inside the cache
// (BENCHMARKS.md, continuous runs E and F).

const (
	// vacuumEvery is how often the dead-row count is looked at.
	vacuumEvery = 5 * time.Second
	// vacuumAfterDead is the dead-row count that starts a vacuum: a few
	// hundred pages' worth, so that a vacuum stays short and an idle
	// installation never runs one.
	vacuumAfterDead = 5000
)

// needsVacuumSQL says whether task_queue needs a vacuum: enough dead rows
// in the statistics (every backend's changes, reported within a second of
// their commit), and no vacuum, by any node, within the last $1 seconds
// (half the loop's period), so that several nodes together vacuum about as
// often as one.
const needsVacuumSQL = `SELECT coalesce(n_dead_tup, 0) >= $2
	AND coalesce(greatest(last_vacuum, last_autovacuum), '-infinity') < now() - make_interval(secs => $1)
	FROM pg_stat_user_tables WHERE relid = 'task_queue'::regclass`

// vacuumSQL vacuums the live table. SKIP_LOCKED: when another node or
// autovacuum is already at it, there is nothing to add. TRUNCATE false: the
// tail pages a vacuum frees are refilled within the second, and giving
// them back would take an exclusive lock that stops every claim and finish
// while it is held.
const vacuumSQL = `VACUUM (SKIP_LOCKED, TRUNCATE false) task_queue`

// vacuumer runs the live table's vacuum loop of one Backend.
type vacuumer struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	vacuumed func() // test hook: called after each vacuum
}

// startVacuum starts b's vacuum loop; stopVacuum ends it.
func (b *Backend) startVacuum(every time.Duration, vacuumed func()) {
	ctx, cancel := context.WithCancel(context.Background())
	b.vacuum = &vacuumer{cancel: cancel, vacuumed: vacuumed}
	b.vacuum.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				b.vacuumIfDead(ctx, every)
			}
		}
	})
}

// stopVacuum ends the loop and waits for a vacuum in progress to be
// cancelled.
func (b *Backend) stopVacuum() {
	if b.vacuum == nil {
		return
	}
	b.vacuum.cancel()
	b.vacuum.wg.Wait()
}

// vacuumIfDead vacuums task_queue when enough of it is dead and no node
// has vacuumed it for a period. Errors are dropped: the next tick tries
// again, and autovacuum remains behind it.
func (b *Backend) vacuumIfDead(ctx context.Context, period time.Duration) {
	var due bool
	err := b.pool.QueryRow(ctx, needsVacuumSQL, period.Seconds()/2, vacuumAfterDead).Scan(&due)
	if err != nil || !due {
		return
	}
	if _, err := b.pool.Exec(ctx, vacuumSQL); err != nil {
		return
	}
	if b.vacuum.vacuumed != nil {
		b.vacuum.vacuumed()
	}
}
