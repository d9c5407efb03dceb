package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testRetention(t *testing.T) {
	su.run(t, "DeletesFinishedTasksWithTheirHistory", func(t *testing.T, s store.Store) {
		old := newItem(tenantA)
		c := admitClaimed(t, s, at(0), old)
		if err := appendEvidence(t, s, at(time.Second), c.Lease(), ruleEvidence...); err != nil {
			t.Fatalf("AppendEvidence: %v", err)
		}
		finishOne(t, s, at(2*time.Second), succeed(c.Lease()), true)
		recent := newItem(tenantA)
		rc := admitClaimed(t, s, at(time.Hour), recent)
		finishOne(t, s, at(time.Hour+time.Second), succeed(rc.Lease()), true)
		live := admitOne(t, s, at(0), newItem(tenantA)) // old, but not finished

		n, err := s.DeleteFinished(t.Context(), &store.DeleteFinishedParams{Before: at(time.Minute), Limit: 10})
		if err != nil || n != 1 {
			t.Fatalf("DeleteFinished = %d, %v; want the one task finished before the cut-off", n, err)
		}
		for name, read := range map[string]func() error{
			"GetTask": func() error {
				_, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: old.TaskID})
				return err
			},
			"ListEvents": func() error {
				_, err := s.ListEvents(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: old.TaskID})
				return err
			},
			"ListEvidence": func() error {
				_, err := s.ListEvidence(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: old.TaskID})
				return err
			},
		} {
			wantErrIs(t, name+" of a deleted task", read(), store.ErrNotFound)
		}
		// The deleted task's key can be used again: a new task.
		if again := wantUnbound(t, s, at(2*time.Hour), old); again.ID == old.TaskID {
			t.Fatalf("re-admitting a deleted task's key returned the deleted task")
		}
		// The rest is untouched.
		if got := getTask(t, s, tenantA, recent.TaskID); got.State != dockettype.StateSucceeded {
			t.Errorf("recent task is %s, want succeeded and kept", got.State)
		}
		if got := getTask(t, s, tenantA, live.ID); got.State != dockettype.StateQueued {
			t.Errorf("live task is %s, want queued and kept", got.State)
		}
		wantBound(t, s, at(2*time.Hour), recent, recent.TaskID)
		if n, err := s.DeleteFinished(t.Context(), &store.DeleteFinishedParams{Before: at(time.Minute), Limit: 10}); err != nil || n != 0 {
			t.Fatalf("second DeleteFinished = %d, %v; want nothing left to delete", n, err)
		}
	})

	su.run(t, "BoundedBatches", func(t *testing.T, s store.Store) {
		for i := range 5 {
			c := admitClaimed(t, s, at(time.Duration(i)*time.Second), newItem(tenantA))
			finishOne(t, s, at(time.Duration(i)*time.Second+ms), succeed(c.Lease()), true)
		}
		var got []int
		for range 4 {
			n, err := s.DeleteFinished(t.Context(), &store.DeleteFinishedParams{Before: at(time.Hour), Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		if want := []int{2, 2, 1, 0}; !slices.Equal(got, want) {
			t.Fatalf("batches deleted %v, want %v", got, want)
		}
	})
}
