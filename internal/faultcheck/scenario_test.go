//go:build unix

package faultcheck

import (
	"slices"
	"strings"
	"testing"
)

// TestScenarioRegistry: every scenario is listed once under its own name,
// `all` runs them all in the registry's order, and an unknown name is
// refused with the list.
func TestScenarioRegistry(t *testing.T) {
	names := ScenarioNames()
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			t.Errorf("scenario %q is listed twice", n)
		}
		if sc, ok := newScenario(n); !ok || sc.Name() != n {
			t.Errorf("newScenario(%q) = %v, %v", n, sc, ok)
		}
	}
	if !slices.Contains(names, ScenarioSigterm) {
		t.Errorf("scenarios %q: sigterm missing", names)
	}
	got, err := ParseScenarios("sigterm, all,kill9")
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{ScenarioSigterm}, slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == ScenarioSigterm })...)
	if !slices.Equal(got, want) {
		t.Errorf("ParseScenarios = %q, want %q", got, want)
	}
	if _, err := ParseScenarios("kill9,nope"); err == nil || !strings.Contains(err.Error(), ScenarioSigterm) {
		t.Errorf("ParseScenarios(nope) = %v, want an error listing the scenarios", err)
	}
}

// TestScenarioNeeds: what each scenario needs of the database, asked
// before anything starts.
func TestScenarioNeeds(t *testing.T) {
	const sqlite = "/tmp/fc.db"
	nowhere := "postgres://postgres@127.0.0.1:1/fc?sslmode=disable" // no cluster listens on port 1
	for _, tc := range []struct {
		scenario, db string
		skipped      bool
	}{
		{ScenarioPGRestart, sqlite, true},
		{ScenarioPGRestart, nowhere, true},
		{ScenarioClockSkew, sqlite, true},
		{ScenarioClockSkew, nowhere, false},
		{ScenarioConnReset, sqlite, false},
		{ScenarioConnReset, "postgres:///fc?host=/var/run/postgresql", true},
		{ScenarioConnReset, nowhere, false},
		{ScenarioSigterm, sqlite, false},
		{ScenarioSigterm, nowhere, false},
		{ScenarioKill9, sqlite, false},
		{ScenarioRemote, sqlite, false},
		{ScenarioRemote, nowhere, false},
		{"no-such-scenario", sqlite, false},
	} {
		if why := SkipReason(tc.scenario, tc.db); (why != "") != tc.skipped {
			t.Errorf("SkipReason(%s, %s) = %q, want skipped %v", tc.scenario, tc.db, why, tc.skipped)
		}
	}
}
