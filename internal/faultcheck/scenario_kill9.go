//go:build unix

package faultcheck

import (
	"context"
	mrand "math/rand/v2"
)

// ScenarioKill9 kills the server with SIGKILL at random moments.
const ScenarioKill9 = "kill9"

// kill9 kills the server with SIGKILL every 1–4 s and starts it again
// 0–1 s later, on the same address and database: what a crash, an OOM kill
// or a pulled plug leaves behind must be recovered.
type kill9 struct{ nothingToHeal }

func newKill9() Scenario { return kill9{} }

func (kill9) Name() string { return ScenarioKill9 }

func (kill9) Needs(string) string { return "" }

func (kill9) Setup(_ context.Context, r *rig) error { return r.addNode(nodeConfig{}) }

func (kill9) Inject(ctx context.Context, r *rig, rng *mrand.Rand) error {
	return r.killsAndStops(ctx, rng, nil)
}
