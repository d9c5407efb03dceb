package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func overdueIDs(ts []store.OverdueTask) []string {
	ids := make([]string, len(ts))
	for i, o := range ts {
		ids[i] = o.TaskID
	}
	return ids
}

func withDeadline(d time.Duration) *store.AdmitItem {
	it := newItem(tenantA)
	it.DeadlineAt = at(d)
	return it
}

func (su suite) testDeadline(t *testing.T) {
	su.run(t, "FindOverdue", func(t *testing.T, s store.Store) {
		done := admitClaimed(t, s, at(0), withDeadline(time.Second))
		finishOne(t, s, at(0), succeed(done.Lease()), true)
		running := admitClaimed(t, s, at(0), withDeadline(3*time.Second))
		queued := admitOne(t, s, at(0), withDeadline(5*time.Second))
		exact := admitOne(t, s, at(0), withDeadline(10*time.Second))
		admitOne(t, s, at(0), withDeadline(10*time.Second+ms)) // not yet due

		now := at(10 * time.Second)
		got := findOverdue(t, s, now, 10)
		want := []store.OverdueTask{
			{Lease: running.Lease(), Tenant: tenantA, Queue: store.PoolQueue(dockettype.PoolOnline), State: dockettype.StateRunning},
			{Lease: store.Lease{TaskID: queued.ID, Epoch: 0}, Tenant: tenantA, Queue: store.PoolQueue(dockettype.PoolOnline), State: dockettype.StateQueued},
			{Lease: store.Lease{TaskID: exact.ID, Epoch: 0}, Tenant: tenantA, Queue: store.PoolQueue(dockettype.PoolOnline), State: dockettype.StateQueued},
		}
		if !slices.Equal(got, want) {
			t.Errorf("overdue at 10s = %+v,\nwant (earliest deadline first, deadline <= Now, non-terminal only) %+v", got, want)
		}
		if got := findOverdue(t, s, now, 1); !slices.Equal(got, want[:1]) {
			t.Errorf("overdue with limit 1 = %+v, want %+v", got, want[:1])
		}
		// The scan is read-only.
		wantState(t, getTask(t, s, tenantA, running.Task.ID), dockettype.StateRunning, 1)
	})

	su.run(t, "Expire", func(t *testing.T, s store.Store) {
		running := admitClaimed(t, s, at(0), withDeadline(3*time.Second))
		queued := admitOne(t, s, at(0), withDeadline(5*time.Second))

		now := at(10 * time.Second)
		found := findOverdue(t, s, now, 10)
		got := expireTasks(t, s, now, found)
		want := []store.OverdueTask{
			{Lease: running.Lease(), Tenant: tenantA, Queue: store.PoolQueue(dockettype.PoolOnline), State: dockettype.StateRunning},
			{Lease: store.Lease{TaskID: queued.ID, Epoch: 0}, Tenant: tenantA, Queue: store.PoolQueue(dockettype.PoolOnline), State: dockettype.StateQueued},
		}
		if !sameSet(overdueIDs(got), overdueIDs(want)) {
			t.Fatalf("ExpireTasks returned %v, want %v", overdueIDs(got), overdueIDs(want))
		}
		for _, g := range got {
			w := want[slices.IndexFunc(want, func(o store.OverdueTask) bool { return o.TaskID == g.TaskID })]
			if g != w {
				t.Errorf("expired item = %+v, want %+v (the lease and state it had before)", g, w)
			}
		}
		for _, w := range want {
			task := getTask(t, s, tenantA, w.TaskID)
			wantState(t, task, dockettype.StateTimedOut, w.Epoch+1)
			wantCode(t, task, dockettype.CodeDeadlineExceeded)
			wantTimePtr(t, "FinishedAt", task.FinishedAt, now)
			wantReleased(t, s, w.TaskID, now)
			ev := lastEvent(t, s, tenantA, w.TaskID, w.State, dockettype.StateTimedOut, w.Epoch+1)
			if ev.Code != dockettype.CodeDeadlineExceeded {
				t.Errorf("timeout event code = %q, want deadline_exceeded", ev.Code)
			}
		}
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)

		// The running worker's late writes are fenced.
		res := finishOne(t, s, at(11*time.Second), succeed(running.Lease()), false)
		if res.State != dockettype.StateTimedOut {
			t.Errorf("late FinishResult.State = %s, want timed_out", res.State)
		}
		if refused := heartbeat(t, s, at(11*time.Second), running.Lease()); len(refused) != 1 || refused[0].State != dockettype.StateTimedOut {
			t.Errorf("late heartbeat refused %v, want it refused with the task's state, timed_out", refused)
		}
		if got := findOverdue(t, s, at(11*time.Second), 10); len(got) != 0 {
			t.Errorf("overdue after expiry = %v, want none", overdueIDs(got))
		}
	})

	su.run(t, "SkipsChangedSinceScan", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name   string
			claim  bool // claim the task before the scan
			change func(t *testing.T, task *dockettype.Task, c *store.ClaimedTask, now time.Time)
			state  dockettype.State
			epoch  int64
		}{
			{"finished", true, func(t *testing.T, _ *dockettype.Task, c *store.ClaimedTask, now time.Time) {
				finishOne(t, s, now, succeed(c.Lease()), true)
			}, dockettype.StateSucceeded, 1},
			{"claimed", false, func(t *testing.T, task *dockettype.Task, _ *store.ClaimedTask, now time.Time) {
				// Claimed just before its deadline by a node whose scan ran
				// just after it.
				if c := claimOne(t, s, now.Add(-ms)); c.Task.ID != task.ID {
					t.Fatalf("claimed %s, want %s", c.Task.ID, task.ID)
				}
			}, dockettype.StateRunning, 1},
			{"cancelled", false, func(t *testing.T, task *dockettype.Task, _ *store.ClaimedTask, now time.Time) {
				cancel(t, s, now, tenantA, task.ID)
			}, dockettype.StateCancelled, 1},
			{"expired by another node", true, func(t *testing.T, task *dockettype.Task, c *store.ClaimedTask, now time.Time) {
				items := []store.OverdueTask{{Lease: c.Lease(), Tenant: tenantA, Queue: store.PoolQueue(dockettype.PoolOnline), State: dockettype.StateRunning}}
				if got := expireTasks(t, s, now, items); len(got) != 1 {
					t.Fatalf("first expiry returned %v, want the task", overdueIDs(got))
				}
			}, dockettype.StateTimedOut, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				start := at(time.Hour)
				it := newItem(tenantA)
				it.DeadlineAt = start.Add(time.Second)
				task := admitOne(t, s, start, it)
				var c *store.ClaimedTask
				if tc.claim {
					c = claimOne(t, s, start)
				}
				now := start.Add(time.Second)
				found := findOverdue(t, s, now, 10)
				if len(found) != 1 || found[0].TaskID != task.ID {
					t.Fatalf("overdue = %v, want only %s", overdueIDs(found), task.ID)
				}
				tc.change(t, task, c, now)
				if got := expireTasks(t, s, now, found); len(got) != 0 {
					t.Errorf("ExpireTasks after the task changed returned %+v, want none", got)
				}
				wantState(t, getTask(t, s, tenantA, task.ID), tc.state, tc.epoch)
				if cur := getTask(t, s, tenantA, task.ID); !cur.State.Terminal() {
					cancel(t, s, now, tenantA, task.ID)
				}
			})
		}
	})
}
