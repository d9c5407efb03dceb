package postgres

import (
	"context"

	"github.com/docket-dev/docket/internal/store/engine"
)

// The statements the scale test explains, as the store runs them.
const (
	TakeSQL        = takeSQL
	FindExpiredSQL = engine.FindExpiredLeasesSQL
	FindOverdueSQL = engine.FindOverdueSQL
)

// ThroughputSQL is the throughput count as the store runs it.
var ThroughputSQL = engine.ThroughputSQL(dialect)

// WritePlanSettings are the settings every write transaction runs under.
var WritePlanSettings = writePlanSettings

// The statements that find live rows by ID.
const (
	LockLiveSQL = lockLiveSQL
	EndSQL      = endSQL
	ReviveSQL   = reviveSQL
)

// Setting reads a run-time setting on a connection of b's pool.
func Setting(t interface{ Context() context.Context }, b *Backend, name string) (string, error) {
	var v string
	err := b.pool.QueryRow(t.Context(), "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}
