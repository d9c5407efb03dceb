package storetest

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testCancel(t *testing.T) {
	su.run(t, "Queued", func(t *testing.T, s store.Store) {
		task := admitOne(t, s, at(0), newItem(tenantA))
		now := at(time.Second)
		res := cancel(t, s, now, tenantA, task.ID)
		if !res.Changed || res.From != dockettype.StateQueued || res.Previous != (store.Lease{TaskID: task.ID, Epoch: 0}) {
			t.Errorf("cancel of a queued task: Changed %v From %s Previous %+v, want changed from queued, previous epoch 0",
				res.Changed, res.From, res.Previous)
		}
		wantState(t, res.Task, dockettype.StateCancelled, 1)
		stored := getTask(t, s, tenantA, task.ID)
		wantState(t, stored, dockettype.StateCancelled, 1)
		wantTimePtr(t, "FinishedAt", stored.FinishedAt, now)
		wantReleased(t, s, task.ID, now)
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
		lastEvent(t, s, tenantA, task.ID, dockettype.StateQueued, dockettype.StateCancelled, 1)
		if got := claim(t, s, at(2*time.Second), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Errorf("claim after cancel got %v, want none", claimedIDs(got))
		}
	})

	su.run(t, "Running", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		now := at(time.Second)
		res := cancel(t, s, now, tenantA, c.Task.ID)
		if !res.Changed || res.From != dockettype.StateRunning || res.Previous != c.Lease() {
			t.Errorf("cancel of a running task: Changed %v From %s Previous %+v, want changed from running, previous %+v",
				res.Changed, res.From, res.Previous, c.Lease())
		}
		wantState(t, res.Task, dockettype.StateCancelled, 2)
		wantReleased(t, s, c.Task.ID, now)
		lastEvent(t, s, tenantA, c.Task.ID, dockettype.StateRunning, dockettype.StateCancelled, 2)

		// The worker still holds the previous lease; all its writes are fenced.
		late := at(2 * time.Second)
		if r := finishOne(t, s, late, succeed(res.Previous), false); r.State != dockettype.StateCancelled {
			t.Errorf("late FinishResult.State = %s, want cancelled", r.State)
		}
		if refused := heartbeat(t, s, late, res.Previous); len(refused) != 1 || refused[0].State != dockettype.StateCancelled {
			t.Errorf("late heartbeat: refused %v, want it refused with the task's state, cancelled", refused)
		}
		wantErrIs(t, "late AppendEvidence", appendEvidence(t, s, late, res.Previous, ruleEvidence...), store.ErrStaleLease)
		wantState(t, getTask(t, s, tenantA, c.Task.ID), dockettype.StateCancelled, 2)
	})

	su.run(t, "Terminal", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			state dockettype.State
			end   func(t *testing.T, c *store.ClaimedTask, now time.Time)
		}{
			{dockettype.StateSucceeded, func(t *testing.T, c *store.ClaimedTask, now time.Time) {
				finishOne(t, s, now, succeed(c.Lease()), true)
			}},
			{dockettype.StateFailed, func(t *testing.T, c *store.ClaimedTask, now time.Time) {
				finishOne(t, s, now, fail(c.Lease(), dockettype.CodeWorkflowError), true)
			}},
			{dockettype.StateCancelled, func(t *testing.T, c *store.ClaimedTask, now time.Time) {
				cancel(t, s, now, tenantA, c.Task.ID)
			}},
			{dockettype.StateTimedOut, func(t *testing.T, c *store.ClaimedTask, now time.Time) {
				items := []store.OverdueTask{{Lease: c.Lease(), Tenant: tenantA, Queue: store.PoolQueue(dockettype.PoolOnline), State: dockettype.StateRunning}}
				if got := expireTasks(t, s, now, items); len(got) != 1 {
					t.Fatalf("ExpireTasks returned %v, want the task", overdueIDs(got))
				}
			}},
		} {
			t.Run(string(tc.state), func(t *testing.T) {
				it := newItem(tenantA)
				it.DeadlineAt = at(time.Second) // due, for the timed_out case
				c := admitClaimed(t, s, at(0), it)
				ended := at(time.Second)
				tc.end(t, c, ended)
				before := getTask(t, s, tenantA, c.Task.ID)
				nEvents := len(listEvents(t, s, tenantA, c.Task.ID))

				res := cancel(t, s, at(time.Minute), tenantA, c.Task.ID)
				if res.Changed {
					t.Errorf("cancel of a %s task: Changed true, want false", tc.state)
				}
				if res.Task == nil || res.Task.State != tc.state || res.Task.LeaseEpoch != before.LeaseEpoch {
					t.Errorf("cancel returned %+v, want the task unchanged in state %s epoch %d", res.Task, tc.state, before.LeaseEpoch)
				}
				after := getTask(t, s, tenantA, c.Task.ID)
				wantState(t, after, tc.state, before.LeaseEpoch)
				wantTimePtr(t, "FinishedAt", after.FinishedAt, ended)
				wantReleased(t, s, c.Task.ID, ended)
				if got := len(listEvents(t, s, tenantA, c.Task.ID)); got != nEvents {
					t.Errorf("events after cancelling a terminal task = %d, want %d", got, nEvents)
				}
			})
		}
		// Released once each: a second release would drive usage negative.
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
		admitOne(t, s, at(time.Hour), newItem(tenantA))
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
		if ten := getTenant(t, s, tenantA); ten.InFlight != 1 {
			t.Errorf("tenant InFlight = %d, want 1", ten.InFlight)
		}
	})

	su.run(t, "OtherTenant", func(t *testing.T, s store.Store) {
		task := admitOne(t, s, at(0), newItem(tenantA))
		_, err := s.Cancel(t.Context(), &store.CancelParams{Now: at(time.Second), Tenant: tenantB, TaskID: task.ID})
		wantErrIs(t, "Cancel of another tenant's task", err, store.ErrNotFound)
		wantState(t, getTask(t, s, tenantA, task.ID), dockettype.StateQueued, 0)
		wantHeld(t, s, task.ID)
	})

	su.run(t, "UnknownID", func(t *testing.T, s store.Store) {
		_, err := s.Cancel(t.Context(), &store.CancelParams{Now: at(0), Tenant: tenantA, TaskID: newID()})
		wantErrIs(t, "Cancel of an unknown task", err, store.ErrNotFound)
	})
}
