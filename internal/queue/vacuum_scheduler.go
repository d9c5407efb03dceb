package queue

import (
	"context"

	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// vacuumAfterDead is the dead-row count of the live table that makes a
// vacuum worth it: a few hundred pages' worth, so that a vacuum stays short
// and an idle installation never runs one.
const vacuumAfterDead = 5000

// VacuumScheduler keeps the live table of a store that needs it
// (store.Vacuumer: PostgreSQL, see postgres/vacuum.go) small: each tick
// asks the store to vacuum it when enough of it is dead and no node has
// vacuumed it within half a period, so that several nodes together vacuum
// about as often as one. It is a scheduler like the others: its own loop
// on the service's clock, its own store fork, a query timeout on the
// vacuum. A failed tick is counted and logged; the next one tries again,
// and autovacuum remains behind it.
type VacuumScheduler struct {
	schedulerLoop
	store store.Vacuumer
}

func newVacuumScheduler(base baseService, cfg schedulerConfig, st store.Vacuumer, m *metrics.Metrics, sig *schedulerSignals) *VacuumScheduler {
	v := &VacuumScheduler{store: st}
	v.schedulerLoop = newSchedulerLoop(base, cfg, m, sig, v.tick)
	return v
}

func (v *VacuumScheduler) tick(ctx context.Context) error {
	qctx, cancel := v.query(ctx)
	defer cancel()
	_, err := v.store.Vacuum(qctx, &store.VacuumParams{MinDead: vacuumAfterDead, Quiet: v.interval / 2})
	return err
}
