package migration

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadOrdersAndPendingSkipsApplied(t *testing.T) {
	fsys := fstest.MapFS{
		"m/002_second.sql": {Data: []byte("B")},
		"m/001_first.sql":  {Data: []byte("A")},
		"m/README.md":      {Data: []byte("not a migration")},
	}
	all, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Version != 1 || all[1].Version != 2 || all[0].SQL != "A" {
		t.Fatalf("Load = %+v, want 001 then 002", all)
	}
	pending, err := Pending(all, []int{1})
	if err != nil || len(pending) != 1 || pending[0].Version != 2 {
		t.Fatalf("Pending after 1 = %+v, %v; want only 002", pending, err)
	}
	if pending, err := Pending(all, []int{1, 2}); err != nil || len(pending) != 0 {
		t.Fatalf("Pending after both = %+v, %v; want none", pending, err)
	}
}

func TestPendingRefusesANewerDatabase(t *testing.T) {
	all := []Migration{{Version: 1, Name: "001_first.sql"}}
	if _, err := Pending(all, []int{1, 2}); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Pending with an unknown applied version: %v, want ErrNewerSchema", err)
	}
}

func TestLoadRefusesBadNames(t *testing.T) {
	for _, name := range []string{"m/first.sql", "m/000_zero.sql", "m/x1_bad.sql"} {
		if _, err := Load(fstest.MapFS{name: {Data: []byte("A")}}, "m"); err == nil {
			t.Errorf("Load accepted %s", name)
		}
	}
	dup := fstest.MapFS{"m/001_a.sql": {Data: []byte("A")}, "m/001_b.sql": {Data: []byte("B")}}
	if _, err := Load(dup, "m"); err == nil {
		t.Error("Load accepted two files with one version")
	}
}

func TestCheckForeignNamesWhatItFound(t *testing.T) {
	if err := CheckForeign("database", nil, false); err != nil {
		t.Fatalf("empty database refused: %v", err)
	}
	tables := []string{"a", "b", "c", "d", "e", "f", "g"}
	if err := CheckForeign("database", tables, true); err != nil {
		t.Fatalf("allowed foreign database refused: %v", err)
	}
	err := CheckForeign(`schema "public"`, tables, false)
	if !errors.Is(err, ErrForeignDatabase) {
		t.Fatalf("foreign database: %v, want ErrForeignDatabase", err)
	}
	for _, want := range []string{`schema "public" has 7 tables`, "a, b, c, d, e, …", Table, AllowForeignFlag} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
}

func TestFailedNamesTheMigrationAndCode(t *testing.T) {
	err := Failed(Migration{Version: 1, Name: "001_schema.sql"}, "postgres", "42P07")
	if got := err.Error(); !strings.Contains(got, "001_schema.sql") || !strings.Contains(got, "42P07") || !strings.Contains(got, "duplicate_table") {
		t.Errorf("Failed = %q", got)
	}
}
