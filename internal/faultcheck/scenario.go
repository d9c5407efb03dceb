package faultcheck

import (
	"fmt"
	"strings"
)

// Scenarios.
const (
	ScenarioKill9     = "kill9"            // SIGKILL and restart of the server at random moments
	ScenarioPGRestart = "pg-restart"       // PostgreSQL stopped -m immediate and started again
	ScenarioConnReset = "conn-reset"       // connections reset and stalled by a TCP proxy
	ScenarioAmbiguous = "ambiguous-commit" // a committed submit's answer dropped
	ScenarioPause     = "pause"            // a server frozen (SIGSTOP) past its lease TTL, then resumed
	ScenarioClockSkew = "clock-skew"       // a second node whose clock is 30 s ahead
	ScenarioAll       = "all"
)

// AllScenarios lists every scenario, in the order `all` runs them.
var AllScenarios = []string{ScenarioKill9, ScenarioPGRestart, ScenarioConnReset, ScenarioAmbiguous, ScenarioPause, ScenarioClockSkew}

// ParseScenarios turns a comma-separated list (or "all") into scenarios.
func ParseScenarios(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == ScenarioAll:
			out = append(out, AllScenarios...)
		case isScenario(name):
			out = append(out, name)
		default:
			return nil, fmt.Errorf("unknown scenario %q: want %s or all", name, strings.Join(AllScenarios, ", "))
		}
	}
	seen := map[string]bool{}
	uniq := out[:0]
	for _, n := range out {
		if !seen[n] {
			seen[n] = true
			uniq = append(uniq, n)
		}
	}
	return uniq, nil
}

func isScenario(name string) bool {
	for _, s := range AllScenarios {
		if s == name {
			return true
		}
	}
	return false
}

// SkipReason says why a scenario cannot run against this store, or "".
// pg-restart has further conditions, checked when it runs.
func SkipReason(scenario string, postgres bool) string {
	switch {
	case scenario == ScenarioPGRestart && !postgres:
		return "--db is SQLite: there is no database server to stop (use a postgres:// URL)"
	case scenario == ScenarioClockSkew && !postgres:
		return "--db is SQLite: a second node needs a shared PostgreSQL database (one SQLite node has one clock)"
	}
	return ""
}
