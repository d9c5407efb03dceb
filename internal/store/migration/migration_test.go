package migration

import (
	"errors"
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
