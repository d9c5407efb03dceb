package storetest

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func appendEvidence(t *testing.T, s store.Store, now time.Time, l store.Lease, items ...store.EvidenceItem) error {
	t.Helper()
	return s.AppendEvidence(t.Context(), &store.AppendEvidenceParams{Now: now, Lease: l, Items: items})
}

var ruleEvidence = []store.EvidenceItem{
	{Kind: "rule", Body: []byte(`{"rule": "no_pii", "pass": true}`)},
	{Kind: "rule", Body: []byte(`{"rule": "max_len", "pass": false}`)},
}

func (su suite) testEvidence(t *testing.T) {
	su.run(t, "UnderCurrentLease", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		now := at(time.Second)
		if err := appendEvidence(t, s, now, c.Lease(), ruleEvidence...); err != nil {
			t.Fatalf("AppendEvidence under the current lease: %v", err)
		}
		got := listEvidence(t, s, tenantA, c.Task.ID)
		if len(got) != len(ruleEvidence) {
			t.Fatalf("evidence = %d items, want %d", len(got), len(ruleEvidence))
		}
		for i, want := range ruleEvidence {
			g := got[i]
			if g.TaskID != c.Task.ID || g.Attempt != 1 || g.Epoch != 1 || g.Kind != want.Kind || !jsonEqual(g.Body, want.Body) {
				t.Errorf("evidence %d = task %s attempt %d epoch %d kind %s body %s, want task %s attempt 1 epoch 1 kind %s body %s",
					i, g.TaskID, g.Attempt, g.Epoch, g.Kind, g.Body, c.Task.ID, want.Kind, want.Body)
			}
			wantTime(t, "evidence CreatedAt", g.CreatedAt, now)
		}
	})

	// A nil body is JSON null on every store, as a nil input is: the two
	// backends once differed here (one stored "null", one bound NULL into
	// a NOT NULL column).
	su.run(t, "NilBodyIsNull", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		if err := appendEvidence(t, s, at(time.Second), c.Lease(), store.EvidenceItem{Kind: "note"}); err != nil {
			t.Fatalf("AppendEvidence with a nil body: %v", err)
		}
		got := listEvidence(t, s, tenantA, c.Task.ID)
		if len(got) != 1 || got[0].Kind != "note" || string(got[0].Body) != "null" {
			t.Errorf("evidence = %+v, want one item of kind note with body null", got)
		}
	})

	su.run(t, "SecondAttempt", func(t *testing.T, s store.Store) {
		old := admitClaimed(t, s, at(0), newItem(tenantA))
		finishOne(t, s, at(time.Second), retryAt(old.Lease(), at(time.Second)), true)
		cur := claimOne(t, s, at(2*time.Second))
		if err := appendEvidence(t, s, at(3*time.Second), cur.Lease(), ruleEvidence[0]); err != nil {
			t.Fatalf("AppendEvidence: %v", err)
		}
		got := listEvidence(t, s, tenantA, cur.Task.ID)
		if len(got) != 1 || got[0].Attempt != 2 || got[0].Epoch != 2 {
			t.Errorf("evidence of the second attempt = %+v, want one item with attempt 2 epoch 2", got)
		}
	})

	su.run(t, "StaleLease", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name  string
			lease func(t *testing.T) store.Lease // a lease that is no longer current
		}{
			{"old epoch after re-claim", func(t *testing.T) store.Lease {
				c := admitClaimed(t, s, at(0), newItem(tenantA))
				finishOne(t, s, at(time.Second), retryAt(c.Lease(), at(time.Second)), true)
				claimOne(t, s, at(2*time.Second))
				return c.Lease()
			}},
			{"queued for retry", func(t *testing.T) store.Lease {
				c := admitClaimed(t, s, at(0), newItem(tenantA))
				finishOne(t, s, at(time.Second), retryAt(c.Lease(), at(time.Hour)), true)
				return c.Lease()
			}},
			{"succeeded", func(t *testing.T) store.Lease {
				c := admitClaimed(t, s, at(0), newItem(tenantA))
				finishOne(t, s, at(time.Second), succeed(c.Lease()), true)
				return c.Lease()
			}},
			{"never claimed", func(t *testing.T) store.Lease {
				return store.Lease{TaskID: admitOne(t, s, at(0), newItem(tenantA)).ID, Epoch: 0}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				l := tc.lease(t)
				err := appendEvidence(t, s, at(5*time.Second), l, ruleEvidence...)
				wantErrIs(t, "AppendEvidence under a stale lease", err, store.ErrStaleLease)
				if got := listEvidence(t, s, tenantA, l.TaskID); len(got) != 0 {
					t.Errorf("evidence after a refused append = %d items, want none", len(got))
				}
				// Finish what is left so the next case claims its own task.
				if task := getTask(t, s, tenantA, l.TaskID); !task.State.Terminal() {
					cancel(t, s, at(6*time.Second), tenantA, l.TaskID)
				}
			})
		}
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
	})
}
