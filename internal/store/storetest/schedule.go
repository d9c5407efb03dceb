package storetest

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testSchedule(t *testing.T) {
	su.run(t, "NotClaimedBeforeRunAt", func(t *testing.T, s store.Store) {
		later := newItem(tenantA)
		later.RunAt = at(time.Minute)
		task := admitOne(t, s, at(0), later)
		if task.State != dockettype.StateQueued || task.RunAt == nil {
			t.Fatalf("admitted %+v, want queued with its run_at", task)
		}
		wantTimePtr(t, "RunAt", task.RunAt, at(time.Minute))
		wantTimePtr(t, "stored RunAt", getTask(t, s, tenantA, later.TaskID).RunAt, at(time.Minute))
		// It holds its reservation while it waits.
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)

		now := admitOne(t, s, at(time.Second), newItem(tenantA)) // ready at once
		if got := claim(t, s, at(30*time.Second), dockettype.PoolOnline, 10); len(got) != 1 || got[0].Task.ID != now.ID {
			t.Fatalf("claimed %v before run_at, want only the task without one (%s)", claimedIDs(got), now.ID)
		}
		if got := claim(t, s, at(time.Minute-ms), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claimed %v a millisecond before run_at", claimedIDs(got))
		}
		got := claim(t, s, at(time.Minute), dockettype.PoolOnline, 10)
		if len(got) != 1 || got[0].Task.ID != later.TaskID {
			t.Fatalf("claimed %v at run_at, want %s", claimedIDs(got), later.TaskID)
		}
	})

	su.run(t, "RunAtInThePastIsReady", func(t *testing.T, s store.Store) {
		it := newItem(tenantA)
		it.RunAt = at(-time.Hour)
		admitOne(t, s, at(0), it)
		if got := claim(t, s, at(0), dockettype.PoolOnline, 1); len(got) != 1 || got[0].Task.ID != it.TaskID {
			t.Fatalf("claimed %v, want the task whose run_at has passed", claimedIDs(got))
		}
	})

	su.run(t, "CancelWhileScheduled", func(t *testing.T, s store.Store) {
		it := newItem(tenantA)
		it.RunAt = at(time.Hour)
		admitOne(t, s, at(0), it)
		res := cancel(t, s, at(time.Second), tenantA, it.TaskID)
		if !res.Changed || res.Task.State != dockettype.StateCancelled {
			t.Fatalf("cancel of a scheduled task = %+v", res)
		}
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
		if got := claim(t, s, at(2*time.Hour), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claimed %v after the scheduled task was cancelled", claimedIDs(got))
		}
	})
}
