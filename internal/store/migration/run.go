package migration

import "slices"

// Steps are one backend's statements for Run, each inside the transaction
// the backend holds for the whole migration.
type Steps struct {
	Tables      func() ([]string, error) // the relations where Docket installs, sorted
	CreateTable func() error             // CREATE TABLE IF NOT EXISTS Table
	Applied     func() ([]int, error)    // the versions Table records
	Exec        func(Migration) error    // runs a migration's SQL
	Record      func(Migration) error    // adds its row to Table
}

// Outcome is what a failed Run found: a refusal of the database as found
// (legacy schema, another application's tables, a newer database), or
// the migration whose SQL failed. Both are nil when a step's own
// statement failed.
type Outcome struct {
	Refusal error
	Failed  *Migration
}

// Run decides what to do with the database as found, where (the
// "database", `schema "public"`) and allowForeign as CheckForeign takes
// them, and applies the pending migrations of all in order.
func Run(all []Migration, where string, allowForeign bool, s Steps) (Outcome, error) {
	tables, err := s.Tables()
	if err != nil {
		return Outcome{}, err
	}
	if slices.Contains(tables, LegacyTable) {
		return Outcome{Refusal: ErrLegacySchema}, ErrLegacySchema
	}
	if !slices.Contains(tables, Table) {
		if err := CheckForeign(where, tables, allowForeign); err != nil {
			return Outcome{Refusal: err}, err
		}
	}
	if err := s.CreateTable(); err != nil {
		return Outcome{}, err
	}
	applied, err := s.Applied()
	if err != nil {
		return Outcome{}, err
	}
	pending, err := Pending(all, applied)
	if err != nil {
		return Outcome{Refusal: err}, err
	}
	for _, m := range pending {
		if err := s.Exec(m); err != nil {
			return Outcome{Failed: &m}, err
		}
		if err := s.Record(m); err != nil {
			return Outcome{}, err
		}
	}
	return Outcome{}, nil
}
