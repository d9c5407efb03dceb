//go:build unix

package faultcheck

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"time"

	"github.com/docket-dev/docket/internal/dsn"
)

// ScenarioPGRestart stops PostgreSQL with -m immediate and starts it again.
const ScenarioPGRestart = "pg-restart"

// pgRestart stops the local PostgreSQL cluster of --db at once (`-m
// immediate`, PostgreSQL's crash) every 2–5 s and starts it 1–3 s later.
// It needs a local cluster it may stop: root, Debian's pg_ctlcluster, and
// the cluster on the URL's port.
type pgRestart struct {
	pgStops
}

func newPGRestart() Scenario { return &pgRestart{} }

func (*pgRestart) Name() string { return ScenarioPGRestart }

func (*pgRestart) Needs(db string) string {
	if !dsn.IsPostgres(db) {
		return "--db is SQLite: there is no database server to stop (use a postgres:// URL)"
	}
	_, why := findPGCluster(db)
	return why
}

func (s *pgRestart) Setup(_ context.Context, r *rig) error {
	pg, why := findPGCluster(r.opts.DB)
	if pg == nil {
		return errors.New(why)
	}
	pg.clock = r.opts.Clock
	s.pg = pg
	return r.addNode(nodeConfig{})
}

func (s *pgRestart) Inject(ctx context.Context, r *rig, rng *mrand.Rand) error {
	for {
		if r.sleepBetween(ctx, rng, 2*time.Second, 5*time.Second) != nil {
			return nil
		}
		if err := r.stopPG(rng, s.pg); err != nil {
			return err
		}
	}
}
