package storetest

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testFinish(t *testing.T) {
	su.run(t, "Succeed", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		now := at(2 * time.Second)
		result := []byte(`{"answer": 42, "text": "done"}`)
		res := finishOne(t, s, now, store.FinishItem{Lease: c.Lease(), Kind: store.FinishSucceed, Result: result}, true)
		if res.State != dockettype.StateSucceeded {
			t.Errorf("FinishResult.State = %s, want succeeded", res.State)
		}
		task := getTask(t, s, tenantA, c.Task.ID)
		wantState(t, task, dockettype.StateSucceeded, 1)
		if !jsonEqual(task.Result, result) {
			t.Errorf("Result = %s, want %s", task.Result, result)
		}
		if task.Error != nil {
			t.Errorf("Error = %+v, want nil", task.Error)
		}
		wantTimePtr(t, "FinishedAt", task.FinishedAt, now)
		wantReleased(t, s, c.Task.ID, now)
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
		if ten := getTenant(t, s, tenantA); ten.InFlight != 0 {
			t.Errorf("tenant InFlight = %d, want 0", ten.InFlight)
		}
		ev := lastEvent(t, s, tenantA, c.Task.ID, dockettype.StateRunning, dockettype.StateSucceeded, 1)
		wantTime(t, "terminal event At", ev.At, now)
	})

	su.run(t, "Fail", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		now := at(2 * time.Second)
		res := finishOne(t, s, now, fail(c.Lease(), dockettype.CodeInvalidInput), true)
		if res.State != dockettype.StateFailed {
			t.Errorf("FinishResult.State = %s, want failed", res.State)
		}
		task := getTask(t, s, tenantA, c.Task.ID)
		wantState(t, task, dockettype.StateFailed, 1)
		wantCode(t, task, dockettype.CodeInvalidInput)
		wantTimePtr(t, "FinishedAt", task.FinishedAt, now)
		wantReleased(t, s, c.Task.ID, now)
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
		ev := lastEvent(t, s, tenantA, c.Task.ID, dockettype.StateRunning, dockettype.StateFailed, 1)
		if ev.Code != dockettype.CodeInvalidInput {
			t.Errorf("failure event code = %q, want %s", ev.Code, dockettype.CodeInvalidInput)
		}
	})

	su.run(t, "SecondFinishAfterTerminal", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		first := at(time.Second)
		finishOne(t, s, first, succeed(c.Lease()), true)
		nEvents := len(listEvents(t, s, tenantA, c.Task.ID))

		for _, tc := range []struct {
			name string
			item store.FinishItem
		}{
			{"succeed again", store.FinishItem{Lease: c.Lease(), Kind: store.FinishSucceed, Result: []byte(`{"other":1}`)}},
			{"fail", fail(c.Lease(), dockettype.CodeWorkflowError)},
			{"retry", retryAt(c.Lease(), at(time.Minute))},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := finishOne(t, s, at(2*time.Second), tc.item, false)
				if res.State != dockettype.StateSucceeded {
					t.Errorf("FinishResult.State = %s, want succeeded (unchanged)", res.State)
				}
				task := getTask(t, s, tenantA, c.Task.ID)
				wantState(t, task, dockettype.StateSucceeded, 1)
				if !jsonEqual(task.Result, succeed(c.Lease()).Result) || task.Error != nil {
					t.Errorf("Result %s Error %v, want the first result and no error", task.Result, task.Error)
				}
				wantTimePtr(t, "FinishedAt", task.FinishedAt, first)
				wantReleased(t, s, c.Task.ID, first)
				if got := len(listEvents(t, s, tenantA, c.Task.ID)); got != nEvents {
					t.Errorf("events = %d, want %d (a refused finish writes none)", got, nEvents)
				}
			})
		}
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
	})

	su.run(t, "StaleEpochAfterReclaim", func(t *testing.T, s store.Store) {
		old := admitClaimed(t, s, at(0), newItem(tenantA))
		finishOne(t, s, at(time.Second), retryAt(old.Lease(), at(time.Second)), true)
		cur := claimOne(t, s, at(2*time.Second))
		if cur.Task.LeaseEpoch != 2 {
			t.Fatalf("re-claim epoch = %d, want 2", cur.Task.LeaseEpoch)
		}
		res := finishOne(t, s, at(3*time.Second), succeed(old.Lease()), false)
		if res.State != dockettype.StateRunning {
			t.Errorf("FinishResult.State = %s, want running", res.State)
		}
		wantState(t, getTask(t, s, tenantA, cur.Task.ID), dockettype.StateRunning, 2)
		finishOne(t, s, at(4*time.Second), succeed(cur.Lease()), true)
	})

	su.run(t, "MixedBatch", func(t *testing.T, s store.Store) {
		admitN(t, s, at(0), tenantA, 3, nil)
		cs := claim(t, s, at(time.Second), dockettype.PoolOnline, 3)
		if len(cs) != 3 {
			t.Fatalf("claimed %d, want 3", len(cs))
		}
		stale := cs[1].Lease()
		stale.Epoch = 7
		res := finish(t, s, at(2*time.Second),
			succeed(cs[0].Lease()),
			succeed(stale),
			fail(cs[2].Lease(), dockettype.CodeWorkflowError),
		)
		want := []struct {
			applied bool
			state   dockettype.State
		}{
			{true, dockettype.StateSucceeded},
			{false, dockettype.StateRunning},
			{true, dockettype.StateFailed},
		}
		for i, w := range want {
			if res[i].Applied != w.applied || res[i].State != w.state {
				t.Errorf("item %d: Applied %v State %s, want %v %s", i, res[i].Applied, res[i].State, w.applied, w.state)
			}
			if got := getTask(t, s, tenantA, cs[i].Task.ID).State; got != w.state {
				t.Errorf("task %d state = %s, want %s", i, got, w.state)
			}
		}
		wantHeld(t, s, cs[1].Task.ID)
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
	})

	su.run(t, "UnknownTask", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		res := finish(t, s, at(time.Second), succeed(store.Lease{TaskID: newID(), Epoch: 1}), succeed(c.Lease()))
		if res[0].Applied {
			t.Errorf("finish of an unknown task applied")
		}
		if !res[1].Applied {
			t.Errorf("finish next to an unknown task not applied, want applied")
		}
	})

	su.run(t, "Retry", func(t *testing.T, s store.Store) {
		it := newItem(tenantA)
		first := at(time.Second)
		admitOne(t, s, at(0), it)
		c := claimOne(t, s, first)
		runAfter := at(11 * time.Second)
		res := finishOne(t, s, at(2*time.Second), retryAt(c.Lease(), runAfter), true)
		if res.State != dockettype.StateQueued {
			t.Errorf("FinishResult.State = %s, want queued", res.State)
		}
		task := getTask(t, s, tenantA, it.TaskID)
		wantState(t, task, dockettype.StateQueued, 1)
		wantCode(t, task, dockettype.CodeWorkflowError)
		if task.Attempt != 1 || task.FinishedAt != nil {
			t.Errorf("retried task: Attempt %d FinishedAt %v, want attempt 1 and not finished", task.Attempt, task.FinishedAt)
		}
		wantHeld(t, s, it.TaskID)
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
		lastEvent(t, s, tenantA, it.TaskID, dockettype.StateRunning, dockettype.StateQueued, 1)

		if got := claim(t, s, runAfter.Add(-ms), dockettype.PoolOnline, 1); len(got) != 0 {
			t.Errorf("claim 1ms before RunAfter got %v, want none", claimedIDs(got))
		}
		again := claimOne(t, s, runAfter)
		if again.Task.ID != it.TaskID || again.Task.Attempt != 2 || again.Task.LeaseEpoch != 2 {
			t.Errorf("claim at RunAfter: task %s attempt %d epoch %d, want %s attempt 2 epoch 2",
				again.Task.ID, again.Task.Attempt, again.Task.LeaseEpoch, it.TaskID)
		}
		wantTimePtr(t, "StartedAt after the second claim (the first claim's time)", again.Task.StartedAt, first)
		finishOne(t, s, at(12*time.Second), succeed(again.Lease()), true)
		wantReleased(t, s, it.TaskID, at(12*time.Second))
	})
	su.run(t, "ReleaseAtShutdown", func(t *testing.T, s store.Store) {
		it := newItem(tenantA)
		admitOne(t, s, at(0), it)
		c := claimOne(t, s, at(time.Second))
		now := at(2 * time.Second)
		res := finishOne(t, s, now, store.FinishItem{Lease: c.Lease(), Kind: store.FinishRelease}, true)
		if res.State != dockettype.StateQueued {
			t.Errorf("FinishResult.State = %s, want queued", res.State)
		}
		task := getTask(t, s, tenantA, it.TaskID)
		wantState(t, task, dockettype.StateQueued, 1)
		if task.Attempt != 0 || task.FinishedAt != nil || task.Error != nil {
			t.Errorf("released task: Attempt %d FinishedAt %v Error %v, want attempt 0 (not charged), not finished, no error",
				task.Attempt, task.FinishedAt, task.Error)
		}
		ev := lastEvent(t, s, tenantA, it.TaskID, dockettype.StateRunning, dockettype.StateQueued, 1)
		if ev.Code != dockettype.CodeShutdown {
			t.Errorf("release event code = %q, want %s", ev.Code, dockettype.CodeShutdown)
		}
		wantHeld(t, s, it.TaskID)
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
		// The lease is cleared: nothing expires, and the old lease is fenced.
		if got := findExpired(t, s, at(time.Hour), 10); len(got) != 0 {
			t.Errorf("expired leases after release = %v, want none", expiredIDs(got))
		}
		finishOne(t, s, now, succeed(c.Lease()), false)
		// Ready at once, as the same attempt number.
		again := claimOne(t, s, now)
		if again.Task.ID != it.TaskID || again.Task.Attempt != 1 || again.Task.LeaseEpoch != 2 {
			t.Errorf("claim after release: task %s attempt %d epoch %d, want %s attempt 1 epoch 2",
				again.Task.ID, again.Task.Attempt, again.Task.LeaseEpoch, it.TaskID)
		}
		wantTimePtr(t, "StartedAt after the second claim (the first claim's time)", again.Task.StartedAt, at(time.Second))
		finishOne(t, s, at(3*time.Second), succeed(again.Lease()), true)
		wantReleased(t, s, it.TaskID, at(3*time.Second))
	})
}
