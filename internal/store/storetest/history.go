package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testHistory(t *testing.T) {
	// Workers, clients, the recovery and the deadline schedulers race on the
	// same tasks, as they do in production. Whoever wins, each task ends in
	// exactly one terminal state, recorded by exactly one terminal event.
	su.run(t, "ExactlyOneTerminalEvent", func(t *testing.T, s store.Store) {
		const n = 40
		tasks := admitN(t, s, at(0), tenantA, n, func(it *store.AdmitItem) {
			it.DeadlineAt = at(5 * time.Second)
			it.MaxAttempts = 2
		})
		claimed, err := s.Claim(t.Context(), &store.ClaimParams{Now: at(0), Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "node-1", Limit: 30, LeaseTTL: time.Second})
		if err != nil || len(claimed) != 30 {
			t.Fatalf("Claim = %d tasks, %v; want 30", len(claimed), err)
		}
		recovery := fork(t, s, "recovery", 2)
		deadline := fork(t, s, "deadline", 2)

		now := at(10 * time.Second) // every lease expired, every deadline passed
		var wg sync.WaitGroup
		errs := make(chan error, 4*n)
		start := make(chan struct{})
		do := func(f func() error) {
			wg.Go(func() {
				<-start
				if err := f(); err != nil {
					errs <- err
				}
			})
		}
		for _, c := range claimed {
			do(func() error {
				_, err := s.Finish(t.Context(), &store.FinishParams{Now: now, Items: []store.FinishItem{succeed(c.Lease())}})
				return err
			})
		}
		for i, task := range tasks {
			if i%3 == 0 {
				continue // left to the schedulers
			}
			do(func() error {
				_, err := s.Cancel(t.Context(), &store.CancelParams{Now: now, Tenant: tenantA, TaskID: task.ID})
				return err
			})
		}
		do(func() error { return sweepExpired(t, recovery, now) })
		do(func() error { return sweepOverdue(t, deadline, now) })
		do(func() error { // a second node recovering at the same time
			return sweepExpired(t, s, now)
		})
		do(func() error { // a worker re-claiming recovered tasks and failing them
			for range 5 {
				got, err := s.Claim(t.Context(), &store.ClaimParams{Now: now, Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "node-2", Limit: 4, LeaseTTL: time.Second})
				if err != nil {
					return err
				}
				for _, c := range got {
					if _, err := s.Finish(t.Context(), &store.FinishParams{Now: now, Items: []store.FinishItem{fail(c.Lease(), dockettype.CodeWorkflowError)}}); err != nil {
						return err
					}
				}
			}
			return nil
		})
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("concurrent call: %v", err)
		}

		// Everything is terminal once the deadline sweep is repeated, and
		// every late write under the first leases is refused.
		later := now.Add(time.Second)
		if err := sweepOverdue(t, s, later); err != nil {
			t.Fatalf("deadline sweep: %v", err)
		}
		for _, c := range claimed {
			finishOne(t, s, later, fail(c.Lease(), dockettype.CodeWorkflowError), false)
		}
		for _, task := range tasks {
			if res := cancel(t, s, later, tenantA, task.ID); res.Changed {
				t.Errorf("cancel of %s after the sweep changed it from %s, want it already terminal", task.ID, res.From)
			}
		}

		for _, task := range tasks {
			wantHistory(t, s, task.ID)
		}
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
	})
}

// sweepExpired recovers expired leases in bounded batches until none is left.
func sweepExpired(t *testing.T, s store.Store, now time.Time) error {
	for range 100 {
		found, err := s.FindExpiredLeases(t.Context(), &store.FindExpiredLeasesParams{Now: now, Limit: 8})
		if err != nil || len(found) == 0 {
			return err
		}
		if _, err := s.RecoverLeases(t.Context(), &store.RecoverLeasesParams{Now: now, Items: found}); err != nil {
			return err
		}
	}
	return fmt.Errorf("expired leases still found after 100 sweeps")
}

// sweepOverdue times out overdue tasks in bounded batches until none is left.
func sweepOverdue(t *testing.T, s store.Store, now time.Time) error {
	for range 100 {
		found, err := s.FindOverdue(t.Context(), &store.FindOverdueParams{Now: now, Limit: 8})
		if err != nil || len(found) == 0 {
			return err
		}
		if _, err := s.ExpireTasks(t.Context(), &store.ExpireTasksParams{Now: now, Items: found}); err != nil {
			return err
		}
	}
	return fmt.Errorf("overdue tasks still found after 100 sweeps")
}

// wantHistory checks a terminal task against its events: one admission
// event, a chain of transitions, epochs that never decrease, and exactly one
// terminal event between retries, the last naming the task's state. Its reservation is
// released.
func wantHistory(t *testing.T, s store.Store, id string) {
	t.Helper()
	task := getTask(t, s, tenantA, id)
	if !task.State.Terminal() {
		t.Errorf("task %s is %s, want terminal", id, task.State)
		return
	}
	evs := listEvents(t, s, tenantA, id)
	if len(evs) == 0 || evs[0].From != "" || evs[0].To != dockettype.StateQueued || evs[0].Epoch != 0 {
		t.Errorf("task %s: events %+v, want the first to be \"\"→queued epoch 0", id, evs)
		return
	}
	// A retry is the only way out of a terminal state: terminal events are
	// counted since the last one.
	terminal := 0
	for i, ev := range evs {
		if ev.To.Terminal() {
			terminal++
		}
		if ev.Code == dockettype.CodeRetried {
			if !ev.From.Terminal() || ev.To != dockettype.StateQueued || terminal != 1 {
				t.Errorf("task %s event %d: retry %s→%s after %d terminal events, want terminal→queued after one",
					id, i, ev.From, ev.To, terminal)
			}
			terminal = 0
		}
		if i == 0 {
			continue
		}
		prev := evs[i-1]
		if ev.From != prev.To {
			t.Errorf("task %s event %d: %s→%s follows one ending in %s", id, i, ev.From, ev.To, prev.To)
		}
		if ev.Epoch < prev.Epoch {
			t.Errorf("task %s event %d: epoch %d after epoch %d", id, i, ev.Epoch, prev.Epoch)
		}
	}
	if last := evs[len(evs)-1]; terminal != 1 || last.To != task.State || last.Epoch != task.LeaseEpoch {
		t.Errorf("task %s (%s epoch %d): %d terminal events, last %s→%s epoch %d; want exactly one, the last, to %s epoch %d",
			id, task.State, task.LeaseEpoch, terminal, last.From, last.To, last.Epoch, task.State, task.LeaseEpoch)
	}
}
