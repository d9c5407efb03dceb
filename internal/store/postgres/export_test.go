package postgres

// The statements the scale test explains, as the store runs them.
const (
	TakeSQL        = takeSQL
	FindExpiredSQL = findExpiredSQL
	FindOverdueSQL = findOverdueSQL
)

// WritePlanSettings are the settings every write transaction runs under.
var WritePlanSettings = writePlanSettings

// The statements that find live rows by ID.
const (
	LockLiveSQL = lockLiveSQL
	EndSQL      = endSQL
)

// NotifyVacuums makes the store call vacuumed after each vacuum of the
// live table.
func NotifyVacuums(opts Options, vacuumed func()) Options {
	opts.vacuumed = vacuumed
	return opts
}
