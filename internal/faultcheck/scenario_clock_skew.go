//go:build unix

package faultcheck

import (
	"context"
	mrand "math/rand/v2"
	"time"

	"github.com/docket-dev/docket/internal/dsn"
)

// ScenarioClockSkew runs a second server whose clock is ahead.
const ScenarioClockSkew = "clock-skew"

// clockSkew is how far ahead the second server's clock runs.
const clockSkew = 30 * time.Second

// skewedClock runs two servers on one PostgreSQL database, the second with
// its clock clockSkew ahead (serve's hidden --clock-offset): leases, deadlines
// and recovery must follow the database's clock, not the node's. It injects
// nothing else, and no server is killed, frozen or cut off.
type skewedClock struct{ nothingToHeal }

func newClockSkew() Scenario { return skewedClock{} }

func (skewedClock) Name() string { return ScenarioClockSkew }

func (skewedClock) Needs(db string) string {
	if !dsn.IsPostgres(db) {
		return "--db is SQLite: a second node needs a shared PostgreSQL database (one SQLite node has one clock)"
	}
	return ""
}

func (skewedClock) Setup(_ context.Context, r *rig) error {
	if err := r.addNode(nodeConfig{}); err != nil {
		return err
	}
	r.stayUp = true
	return r.addNode(nodeConfig{clockOffset: clockSkew})
}

func (skewedClock) Inject(ctx context.Context, _ *rig, _ *mrand.Rand) error {
	<-ctx.Done()
	return nil
}
