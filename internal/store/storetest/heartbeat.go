package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func expiredIDs(ls []store.ExpiredLease) []string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.TaskID
	}
	return ids
}

func leaseIDs(ls []store.Lease) []string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.TaskID
	}
	return ids
}

func (su suite) testHeartbeat(t *testing.T) {
	su.run(t, "ExtendsLease", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA)) // lease until 30s
		if refused := heartbeat(t, s, at(20*time.Second), c.Lease()); len(refused) != 0 {
			t.Fatalf("heartbeat of the current lease refused %v", refused)
		}
		if got := findExpired(t, s, at(31*time.Second), 10); len(got) != 0 {
			t.Errorf("expired at 31s after a heartbeat at 20s with TTL 30s: %v, want none", expiredIDs(got))
		}
		got := findExpired(t, s, at(51*time.Second), 10)
		if len(got) != 1 || got[0].Lease != c.Lease() {
			t.Errorf("expired at 51s = %v, want the lease %+v", got, c.Lease())
		}
	})

	su.run(t, "MixedBatch", func(t *testing.T, s store.Store) {
		fresh := admitClaimed(t, s, at(0), newItem(tenantA))

		reclaimed := admitClaimed(t, s, at(0), newItem(tenantA))
		finishOne(t, s, at(0), retryAt(reclaimed.Lease(), at(0)), true)
		current := claimOne(t, s, at(0)) // epoch 2, lease until 30s

		done := admitClaimed(t, s, at(0), newItem(tenantA))
		finishOne(t, s, at(time.Second), succeed(done.Lease()), true)

		refused := heartbeat(t, s, at(20*time.Second), fresh.Lease(), reclaimed.Lease(), done.Lease())
		// Each refused lease comes back as it was sent, with the task's
		// state now: running again under a newer epoch, or finished.
		wantRefused := []store.RefusedLease{
			{Lease: reclaimed.Lease(), State: dockettype.StateRunning},
			{Lease: done.Lease(), State: dockettype.StateSucceeded},
		}
		if len(refused) != len(wantRefused) {
			t.Errorf("refused = %v, want %v", refused, wantRefused)
		}
		for _, r := range refused {
			if !slices.Contains(wantRefused, r) {
				t.Errorf("refused lease %+v, want one of %+v (the epoch that was sent, the state now)", r, wantRefused)
			}
		}

		// The fresh lease was renewed; the refused heartbeat did not renew
		// the re-claimed task's current lease.
		got := findExpired(t, s, at(31*time.Second), 10)
		if want := []string{current.Task.ID}; !slices.Equal(expiredIDs(got), want) {
			t.Errorf("expired at 31s = %v, want only the re-claimed task %v", expiredIDs(got), want)
		}
	})
}
