//go:build unix

package faultcheck

import (
	"context"
	mrand "math/rand/v2"
	"time"
)

// ScenarioSigterm restarts the servers in turn, each stopped with SIGTERM.
const ScenarioSigterm = "sigterm"

// sigtermGrace is the servers' shutdown grace in this scenario: longer than
// most tasks of the load, shorter than the longest (up to 1.5 s), so that
// a stop lets some running tasks finish and hands the others back.
const sigtermGrace = 500 * time.Millisecond

// sigtermExitBound is how long a server may take to exit after SIGTERM:
// the grace, then the hand-back of what still runs, every outcome written
// and the schedulers stopped. One that takes longer fails the run.
const sigtermExitBound = sigtermGrace + 10*time.Second

// sigtermLeaseTTL is the servers' lease TTL in this scenario: long enough
// that a lease lapses only when a stop leaves it to (on a loaded machine
// the default 3 s also lapses where heartbeats are starved, which other
// scenarios test and this one would blame on the stop), short enough that
// a claim a stop lost (claim_lost) is recovered inside the drain.
const sigtermLeaseTTL = 10 * time.Second

// sigterm is a rolling restart under load: every 1–3 s the next server in
// turn is stopped with SIGTERM while tasks run on it, waited for, and
// started again 0–0.5 s later on the same database. On PostgreSQL two
// servers run, so one serves while the other restarts; on SQLite the one
// server is stopped and started.
//
// The checker then holds each graceful stop to what it promises: every
// execution that finished inside the grace has its outcome, every task cut
// short was handed back (queued again at once, its attempt not charged)
// and ran again (checkOutcomesKept, checkAttempts, checkReleases).
type sigterm struct {
	nothingToHeal
	next int // the server stopped next
}

func newSigterm() Scenario { return &sigterm{} }

func (*sigterm) Name() string { return ScenarioSigterm }

func (*sigterm) Needs(string) string { return "" }

func (*sigterm) Setup(_ context.Context, r *rig) error {
	cfg := nodeConfig{grace: sigtermGrace, leaseTTL: sigtermLeaseTTL}
	if err := r.addNode(cfg); err != nil {
		return err
	}
	if !r.postgres {
		return nil
	}
	return r.addNode(cfg)
}

func (s *sigterm) Inject(ctx context.Context, r *rig, rng *mrand.Rand) error {
	for {
		if r.sleepBetween(ctx, rng, time.Second, 3*time.Second) != nil {
			return nil
		}
		n := r.nodes[s.next%len(r.nodes)]
		s.next++
		if err := r.terminate(n, sigtermExitBound); err != nil {
			return err
		}
		_ = r.sleepBetween(context.Background(), rng, 0, 500*time.Millisecond)
		if err := n.Start(context.Background()); err != nil {
			return err
		}
		r.hist.Fault(FaultStart + " " + n.Name)
	}
}
