package migration

import (
	"errors"
	"slices"
	"testing"
)

// fakeDB is a database's migration state as Run's steps see it.
type fakeDB struct {
	tables  []string
	applied []int
	failOn  int // the version whose SQL fails
	ran     []int
}

func (db *fakeDB) steps() Steps {
	return Steps{
		Tables: func() ([]string, error) { return db.tables, nil },
		CreateTable: func() error {
			if !slices.Contains(db.tables, Table) {
				db.tables = append(db.tables, Table)
			}
			return nil
		},
		Applied: func() ([]int, error) { return db.applied, nil },
		Exec: func(m Migration) error {
			if m.Version == db.failOn {
				return errors.New("syntax error")
			}
			db.ran = append(db.ran, m.Version)
			return nil
		},
		Record: func(m Migration) error { db.applied = append(db.applied, m.Version); return nil },
	}
}

func TestRunAppliesPendingInOrderAndRefusesWhatIsNotDockets(t *testing.T) {
	all := []Migration{{Version: 1, Name: "001_a.sql"}, {Version: 2, Name: "002_b.sql"}, {Version: 3, Name: "003_c.sql"}}

	db := &fakeDB{tables: []string{Table}, applied: []int{1}}
	if out, err := Run(all, "the database", false, db.steps()); err != nil || out != (Outcome{}) {
		t.Fatalf("Run on a database at 1: %+v %v", out, err)
	}
	if !slices.Equal(db.ran, []int{2, 3}) || !slices.Equal(db.applied, []int{1, 2, 3}) {
		t.Fatalf("ran %v, applied %v; want 2 and 3 run and recorded", db.ran, db.applied)
	}

	empty := &fakeDB{}
	if _, err := Run(all, "the database", false, empty.steps()); err != nil || len(empty.ran) != 3 {
		t.Fatalf("Run on an empty database: ran %v, %v", empty.ran, err)
	}

	foreign := &fakeDB{tables: []string{"orders"}}
	out, err := Run(all, "the database", false, foreign.steps())
	if !errors.Is(err, ErrForeignDatabase) || !errors.Is(out.Refusal, ErrForeignDatabase) || len(foreign.ran) != 0 {
		t.Fatalf("Run on another application's database: %+v %v, ran %v; want refused, nothing run", out, err, foreign.ran)
	}
	if _, err := Run(all, "the database", true, foreign.steps()); err != nil || len(foreign.ran) != 3 {
		t.Fatalf("Run with allowForeign: ran %v, %v; want every migration", foreign.ran, err)
	}

	legacy := &fakeDB{tables: []string{LegacyTable, Table}}
	if out, err := Run(all, "the database", true, legacy.steps()); !errors.Is(out.Refusal, ErrLegacySchema) || err == nil {
		t.Fatalf("Run on a legacy schema: %+v %v; want ErrLegacySchema", out, err)
	}

	newer := &fakeDB{tables: []string{Table}, applied: []int{1, 2, 3, 4}}
	if out, _ := Run(all, "the database", false, newer.steps()); !errors.Is(out.Refusal, ErrNewerSchema) {
		t.Fatalf("Run on a newer database: %+v; want ErrNewerSchema", out)
	}

	failing := &fakeDB{failOn: 2}
	out, err = Run(all, "the database", false, failing.steps())
	if err == nil || out.Failed == nil || out.Failed.Version != 2 || out.Refusal != nil || !slices.Equal(failing.applied, []int{1}) {
		t.Fatalf("Run with 002 failing: %+v %v, applied %v; want 002 named as failed, 001 recorded", out, err, failing.applied)
	}
}
