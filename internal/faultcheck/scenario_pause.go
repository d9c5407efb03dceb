//go:build unix

package faultcheck

import (
	"context"
	mrand "math/rand/v2"
	"time"
)

// ScenarioPause freezes a server (SIGSTOP) past its lease TTL.
const ScenarioPause = "pause"

// pause freezes a server with SIGSTOP for TTL + 1 s to 2 TTL + 1 s, then
// resumes it: its late results must be fenced. On PostgreSQL two servers
// run and the other one recovers the work; on SQLite the one server
// recovers it after it resumes.
type pause struct{ nothingToHeal }

func newPause() Scenario { return pause{} }

func (pause) Name() string { return ScenarioPause }

func (pause) Needs(string) string { return "" }

func (pause) Setup(_ context.Context, r *rig) error {
	if err := r.addNode(nodeConfig{}); err != nil {
		return err
	}
	if !r.postgres {
		return nil
	}
	return r.addNode(nodeConfig{})
}

func (pause) Inject(ctx context.Context, r *rig, rng *mrand.Rand) error {
	ttl := r.opts.LeaseTTL
	for {
		if r.sleepBetween(ctx, rng, time.Second, 3*time.Second) != nil {
			return nil
		}
		n := r.nodes[rng.IntN(len(r.nodes))]
		if err := n.Pause(); err != nil {
			return err
		}
		r.hist.Fault(FaultPause + " " + n.Name)
		_ = r.sleepBetween(context.Background(), rng, ttl+time.Second, 2*ttl+time.Second)
		if err := n.Resume(); err != nil {
			return err
		}
		r.hist.Fault(FaultResume + " " + n.Name)
	}
}
