package postgres

// The statements the scale test explains, as the store runs them.
const (
	TakeSQL        = takeSQL
	FindExpiredSQL = findExpiredSQL
	FindOverdueSQL = findOverdueSQL
)

// WritePlanSettings are the settings every write transaction runs under.
var WritePlanSettings = writePlanSettings
