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

	// A batch cancel does to each task what Cancel does, in one
	// transaction: queued and running tasks cancelled (the running one's
	// lease fenced), a terminal one unchanged, another tenant's and an
	// unknown one not found, a dependent settled with its dependency (and
	// itself in the batch: cancelled once), every unit released once.
	su.run(t, "Batch", func(t *testing.T, s store.Store) {
		running := admitClaimed(t, s, at(0), newItem(tenantA))
		done := admitClaimed(t, s, at(ms), newItem(tenantA))
		finishOne(t, s, at(2*ms), succeed(done.Lease()), true)
		queued := admitOne(t, s, at(3*ms), newItem(tenantA))
		theirs := admitOne(t, s, at(4*ms), newItem(tenantB))
		parent := admitOne(t, s, at(5*ms), newItem(tenantA))
		child := admitOne(t, s, at(6*ms), dependsOn(tenantA, parent.ID))
		grandchild := admitOne(t, s, at(7*ms), dependsOn(tenantA, child.ID))
		wantUsage(t, s, dockettype.PoolOnline, 6, tenantA, 5)

		now := at(time.Second)
		items := []store.CancelItem{
			{Tenant: tenantA, TaskID: grandchild.ID}, {Tenant: tenantA, TaskID: queued.ID},
			{Tenant: tenantA, TaskID: running.Task.ID}, {Tenant: tenantA, TaskID: done.Task.ID},
			{Tenant: tenantA, TaskID: theirs.ID}, {Tenant: tenantA, TaskID: newID()},
			{Tenant: tenantA, TaskID: parent.ID},
		}
		res, err := s.CancelBatch(t.Context(), &store.CancelBatchParams{Now: now, Items: items})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.CancelBatchResult{
			{Changed: true, From: dockettype.StateQueued, Previous: store.Lease{TaskID: grandchild.ID}, Pool: dockettype.PoolOnline},
			{Changed: true, From: dockettype.StateQueued, Previous: store.Lease{TaskID: queued.ID}, Pool: dockettype.PoolOnline},
			{Changed: true, From: dockettype.StateRunning, Previous: running.Lease(), Pool: dockettype.PoolOnline},
			{From: dockettype.StateSucceeded},
			{NotFound: true},
			{NotFound: true},
			{Changed: true, From: dockettype.StateQueued, Previous: store.Lease{TaskID: parent.ID}, Pool: dockettype.PoolOnline},
		}
		if len(res) != len(want) {
			t.Fatalf("%d results, want %d", len(res), len(want))
		}
		for i := range want {
			if res[i] != want[i] {
				t.Errorf("item %d: %+v, want %+v", i, res[i], want[i])
			}
		}
		for _, id := range []string{queued.ID, parent.ID, grandchild.ID} {
			wantState(t, getTask(t, s, tenantA, id), dockettype.StateCancelled, 1)
			lastEvent(t, s, tenantA, id, dockettype.StateQueued, dockettype.StateCancelled, 1)
		}
		wantState(t, getTask(t, s, tenantA, running.Task.ID), dockettype.StateCancelled, 2)
		wantError(t, getTask(t, s, tenantA, child.ID), dockettype.StateCancelled, dockettype.CodeDependencyFailed)
		wantState(t, getTask(t, s, tenantA, done.Task.ID), dockettype.StateSucceeded, 1)
		wantState(t, getTask(t, s, tenantB, theirs.ID), dockettype.StateQueued, 0)
		if r := finishOne(t, s, at(2*time.Second), succeed(running.Lease()), false); r.State != dockettype.StateCancelled {
			t.Errorf("the running task's late finish: state %s, want cancelled", r.State)
		}
		// Released once each: only the other tenant's unit is held.
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 0)

		_, err = s.CancelBatch(t.Context(), &store.CancelBatchParams{Now: now,
			Items: []store.CancelItem{{Tenant: tenantA, TaskID: queued.ID}, {Tenant: tenantA, TaskID: queued.ID}}})
		wantErrIs(t, "a batch naming a task twice", err, store.ErrInvalid)
	})
}
