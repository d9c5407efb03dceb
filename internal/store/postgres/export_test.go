package postgres

import "github.com/docket-dev/docket/internal/store/engine"

// The statements the scale test explains, as the store runs them.
const (
	TakeSQL        = takeSQL
	FindExpiredSQL = engine.FindExpiredLeasesSQL
	FindOverdueSQL = engine.FindOverdueSQL
)

// WritePlanSettings are the settings every write transaction runs under.
var WritePlanSettings = writePlanSettings

// The statements that find live rows by ID.
const (
	LockLiveSQL = lockLiveSQL
	EndSQL      = endSQL
)
