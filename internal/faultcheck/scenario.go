//go:build unix

package faultcheck

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"strings"
)

// Scenario is one way of injecting faults into a run. Everything else a
// run does — tenants, the load, the drain, the replay of every key, the
// check — is the same for every scenario (rig).
//
// Each scenario lives in a file of its own, scenario_<name>.go, and is
// listed once in scenarios. A value is made for one run, so it may keep
// what it sets up (a proxy, a cluster handle) in its fields. The methods
// are called in this order: Needs; then, if it named nothing missing,
// Setup, Inject (while the load runs), Heal (once the load has ended, even
// when the run was interrupted), and Close (after the servers stopped).
type Scenario interface {
	// Name is what --scenario selects.
	Name() string
	// Needs says what this machine or the database under test (db: a
	// SQLite path or a postgres:// URL) lacks for the scenario to run, or
	// "": the scenario is then skipped and reported SKIPPED with the
	// reason. It is asked before anything starts.
	Needs(db string) string
	// Setup lays the run out before any server starts: it adds the servers
	// (rig.addNode) and may put a proxy between them and their database,
	// or in front of them (rig.endpoints).
	Setup(ctx context.Context, r *rig) error
	// Inject injects faults until ctx is done. rng is the run's, seeded.
	Inject(ctx context.Context, r *rig, rng *mrand.Rand) error
	// Heal ends the faults only this scenario knows of (a stopped
	// database, a proxy's cuts). The rig itself then resumes frozen servers
	// and starts stopped ones.
	Heal(r *rig) error
	// Close releases what Setup made.
	Close(r *rig)
}

// scenarios makes each scenario, in the order `all` runs them. Adding a
// scenario is adding its file and one line here.
var scenarios = []func() Scenario{
	newKill9,
	newPGRestart,
	newConnReset,
	newAmbiguousCommit,
	newPause,
	newClockSkew,
	newSigterm,
	newSchedules,
	newRemote,
	newDependencies,
	newFlow,
}

// ScenarioAll selects every scenario.
const ScenarioAll = "all"

// ScenarioNames lists every scenario, in the order `all` runs them.
func ScenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, newSc := range scenarios {
		names[i] = newSc().Name()
	}
	return names
}

// newScenario makes the scenario called name for one run.
func newScenario(name string) (Scenario, bool) {
	for _, newSc := range scenarios {
		if sc := newSc(); sc.Name() == name {
			return sc, true
		}
	}
	return nil, false
}

// ParseScenarios turns a comma-separated list (or "all") into scenario
// names, each once, in the order given.
func ParseScenarios(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch _, ok := newScenario(name); {
		case name == ScenarioAll:
			out = append(out, ScenarioNames()...)
		case ok:
			out = append(out, name)
		default:
			return nil, fmt.Errorf("unknown scenario %q: want %s or all", name, strings.Join(ScenarioNames(), ", "))
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

// SkipReason says why the scenario called name cannot run against db (a
// SQLite path or a postgres:// URL) on this machine, or "" (also for a name
// that is no scenario: Run reports that).
func SkipReason(name, db string) string {
	sc, ok := newScenario(name)
	if !ok {
		return ""
	}
	return sc.Needs(db)
}

// nothingToHeal is embedded by the scenarios whose faults the rig heals
// alone (it resumes frozen servers and starts stopped ones) and that set up
// nothing to close.
type nothingToHeal struct{}

func (nothingToHeal) Heal(*rig) error { return nil }
func (nothingToHeal) Close(*rig)      {}
