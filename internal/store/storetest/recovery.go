package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testRecovery(t *testing.T) {
	su.run(t, "FindExpiredLeases", func(t *testing.T, s store.Store) {
		// Leases expire at 30s, 31s and 32s; one more lasts an hour.
		var want []store.Lease
		for i := range 3 {
			it := newItem(tenantA)
			it.MaxAttempts = 5
			c := admitClaimed(t, s, at(time.Duration(i)*time.Second), it)
			want = append(want, c.Lease())
		}
		long := admitClaimed(t, s, at(0), newItem(tenantA))
		if refused, err := s.Heartbeat(t.Context(), &store.HeartbeatParams{Now: at(0), LeaseTTL: time.Hour, Leases: []store.Lease{long.Lease()}}); err != nil || len(refused) != 0 {
			t.Fatalf("Heartbeat with TTL 1h: refused %v, err %v", refused, err)
		}
		done := admitClaimed(t, s, at(0), newItem(tenantA))
		finishOne(t, s, at(time.Second), succeed(done.Lease()), true)
		admitOne(t, s, at(0), newItem(tenantA)) // queued: has no lease

		got := findExpired(t, s, at(31*time.Second), 10)
		if wantIDs := []string{want[0].TaskID, want[1].TaskID}; !slices.Equal(expiredIDs(got), wantIDs) {
			t.Fatalf("expired at 31s = %v, want %v (oldest expiry first)", expiredIDs(got), wantIDs)
		}
		for i, e := range got {
			if e.Lease != want[i] || e.Tenant != tenantA || e.Queue != store.PoolQueue(dockettype.PoolOnline) || e.Attempt != 1 || e.MaxAttempts != 5 {
				t.Errorf("expired lease %d = %+v, want lease %+v tenant %s pool online attempt 1 max attempts 5", i, e, want[i], tenantA)
			}
		}
		if got := findExpired(t, s, at(31*time.Second), 1); len(got) != 1 || got[0].Lease != want[0] {
			t.Errorf("expired with limit 1 = %v, want only %+v", expiredIDs(got), want[0])
		}
		// The scan is read-only.
		wantState(t, getTask(t, s, tenantA, want[0].TaskID), dockettype.StateRunning, 1)
	})

	su.run(t, "Requeue", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		now := at(ttl)
		found := findExpired(t, s, now, 10)
		wantRecovered(t, recoverLeases(t, s, now, found), store.RecoverResult{Requeued: 1, Recovered: []store.Lease{c.Lease()}})
		task := getTask(t, s, tenantA, c.Task.ID)
		wantState(t, task, dockettype.StateQueued, 2)
		if task.FinishedAt != nil {
			t.Errorf("requeued task FinishedAt = %v, want nil", task.FinishedAt)
		}
		wantHeld(t, s, c.Task.ID)
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
		lastEvent(t, s, tenantA, c.Task.ID, dockettype.StateRunning, dockettype.StateQueued, 2)

		// The recovered lease is fenced.
		res := finishOne(t, s, now, succeed(c.Lease()), false)
		if res.State != dockettype.StateQueued {
			t.Errorf("FinishResult.State = %s, want queued", res.State)
		}
		if refused := heartbeat(t, s, now, c.Lease()); len(refused) != 1 {
			t.Errorf("heartbeat of the recovered lease: refused %v, want it refused", refused)
		}

		again := claimOne(t, s, now)
		if again.Task.ID != c.Task.ID || again.Task.Attempt != 2 || again.Task.LeaseEpoch != 3 {
			t.Errorf("claim after recovery: task %s attempt %d epoch %d, want %s attempt 2 epoch 3",
				again.Task.ID, again.Task.Attempt, again.Task.LeaseEpoch, c.Task.ID)
		}
	})

	su.run(t, "AttemptsExhausted", func(t *testing.T, s store.Store) {
		for _, maxAttempts := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("max_attempts=%d", maxAttempts), func(t *testing.T) {
				it := newItem(tenantA)
				it.MaxAttempts = maxAttempts
				now := at(time.Duration(maxAttempts) * time.Hour)
				admitOne(t, s, now, it)
				var last *store.ClaimedTask
				for attempt := 1; attempt <= maxAttempts; attempt++ {
					last = claimOne(t, s, now)
					if last.Task.Attempt != attempt {
						t.Fatalf("claim %d: Attempt = %d", attempt, last.Task.Attempt)
					}
					now = now.Add(ttl)
					want := store.RecoverResult{Requeued: 1, Recovered: []store.Lease{last.Lease()}}
					if attempt == maxAttempts {
						want = store.RecoverResult{Failed: 1, Recovered: []store.Lease{last.Lease()}}
					}
					if !wantRecovered(t, recoverLeases(t, s, now, findExpired(t, s, now, 10)), want) {
						t.Fatalf("after attempt %d of %d", attempt, maxAttempts)
					}
				}
				task := getTask(t, s, tenantA, it.TaskID)
				if task.State != dockettype.StateFailed {
					t.Fatalf("state = %s, want failed", task.State)
				}
				wantCode(t, task, dockettype.CodeLeaseLost)
				wantTimePtr(t, "FinishedAt", task.FinishedAt, now)
				wantReleased(t, s, it.TaskID, now)
				ev := lastEvent(t, s, tenantA, it.TaskID, dockettype.StateRunning, dockettype.StateFailed, task.LeaseEpoch)
				if ev.Code != dockettype.CodeLeaseLost {
					t.Errorf("terminal event code = %q, want lease_lost", ev.Code)
				}
				finishOne(t, s, now, succeed(last.Lease()), false)
			})
		}
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
	})

	// Between the scan and the write the task may change; the write must
	// notice and skip it.
	su.run(t, "SkipsChangedSinceScan", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name   string
			change func(t *testing.T, c *store.ClaimedTask, now time.Time)
			state  dockettype.State
			epoch  int64
		}{
			{"renewed by heartbeat", func(t *testing.T, c *store.ClaimedTask, now time.Time) {
				if refused := heartbeat(t, s, now, c.Lease()); len(refused) != 0 {
					t.Fatalf("heartbeat refused %v", refused)
				}
			}, dockettype.StateRunning, 1},
			{"finished", func(t *testing.T, c *store.ClaimedTask, now time.Time) {
				finishOne(t, s, now, succeed(c.Lease()), true)
			}, dockettype.StateSucceeded, 1},
			{"cancelled", func(t *testing.T, c *store.ClaimedTask, now time.Time) {
				cancel(t, s, now, tenantA, c.Task.ID)
			}, dockettype.StateCancelled, 2},
			{"recovered by another node", func(t *testing.T, c *store.ClaimedTask, now time.Time) {
				found := []store.ExpiredLease{{Lease: c.Lease(), Tenant: tenantA, Queue: store.PoolQueue(dockettype.PoolOnline), Attempt: 1, MaxAttempts: 3}}
				if res := recoverLeases(t, s, now, found); res.Requeued != 1 {
					t.Fatalf("first recovery = %+v, want 1 requeued", res)
				}
			}, dockettype.StateQueued, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				start := at(time.Hour)
				c := admitClaimed(t, s, start, newItem(tenantA))
				now := start.Add(ttl)
				found := findExpired(t, s, now, 10)
				if len(found) != 1 || found[0].Lease != c.Lease() {
					t.Fatalf("expired = %v, want only %+v", found, c.Lease())
				}
				tc.change(t, c, now)
				wantRecovered(t, recoverLeases(t, s, now, found), store.RecoverResult{Skipped: 1})
				wantState(t, getTask(t, s, tenantA, c.Task.ID), tc.state, tc.epoch)
				// Leave nothing queued or running for the next case.
				if task := getTask(t, s, tenantA, c.Task.ID); !task.State.Terminal() {
					cancel(t, s, now, tenantA, c.Task.ID)
				}
			})
		}
	})
}

// wantRecovered compares a RecoverResult; Recovered in any order.
func wantRecovered(t *testing.T, got, want store.RecoverResult) bool {
	t.Helper()
	if got.Requeued != want.Requeued || got.Failed != want.Failed || got.Skipped != want.Skipped ||
		len(got.Recovered) != len(want.Recovered) || !sameSet(leaseIDs(got.Recovered), leaseIDs(want.Recovered)) {
		t.Errorf("RecoverLeases = %+v, want %+v", got, want)
		return false
	}
	for _, l := range got.Recovered {
		if !slices.Contains(want.Recovered, l) {
			t.Errorf("RecoverLeases reported lease %+v, want the lease as scanned, one of %+v", l, want.Recovered)
			return false
		}
	}
	return true
}
