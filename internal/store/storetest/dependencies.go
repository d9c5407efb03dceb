package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// dependsOn returns a new item of tenant that depends on ids.
func dependsOn(tenant string, ids ...string) *store.AdmitItem {
	it := newItem(tenant)
	it.DependsOn = ids
	return it
}

func wantWaiting(t *testing.T, task *dockettype.Task, want dockettype.WaitingOn) {
	t.Helper()
	if task.WaitingOn != want {
		t.Errorf("task %s: waiting_on %q (state %s), want %q", task.ID, task.WaitingOn, task.State, want)
	}
}

func wantError(t *testing.T, task *dockettype.Task, state dockettype.State, code dockettype.Code) {
	t.Helper()
	if task.State != state || task.Error == nil || task.Error.Code != code {
		t.Errorf("task %s: state %s error %+v, want %s with code %s", task.ID, task.State, task.Error, state, code)
	}
}

func (su suite) testDependencies(t *testing.T) {
	su.run(t, "WaitsThenReadyInTheFinishingTransaction", func(t *testing.T, s store.Store) {
		a := admitClaimed(t, s, at(0), newItem(tenantA))
		b := admitOne(t, s, at(0), newItem(tenantA))
		dep := admitOne(t, s, at(ms), dependsOn(tenantA, a.Task.ID, b.ID))
		wantWaiting(t, dep, dockettype.WaitingOnDependencies)
		if got := dep.DependsOn; !slices.Equal(got, []string{a.Task.ID, b.ID}) {
			t.Errorf("admitted DependsOn = %v, want [a b]", got)
		}
		stored := getTask(t, s, tenantA, dep.ID)
		wantWaiting(t, stored, dockettype.WaitingOnDependencies)
		if !slices.Equal(stored.DependsOn, []string{a.Task.ID, b.ID}) {
			t.Errorf("GetTask DependsOn = %v, want [a b]", stored.DependsOn)
		}
		// Admitted: it holds its unit of capacity while it waits.
		wantUsage(t, s, dockettype.PoolOnline, 3, tenantA, 3)

		bc := claimOne(t, s, at(2*ms)) // b; the dependent is not claimable
		if bc.Task.ID != b.ID {
			t.Fatalf("claimed %s, want b %s", bc.Task.ID, b.ID)
		}
		if got := claim(t, s, at(3*ms), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claimed %v while every ready task runs and the dependent waits", claimedIDs(got))
		}
		finishOne(t, s, at(4*ms), succeed(a.Lease()), true)
		wantWaiting(t, getTask(t, s, tenantA, dep.ID), dockettype.WaitingOnDependencies)
		if got := claim(t, s, at(5*ms), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claimed %v with one dependency still running", claimedIDs(got))
		}
		finishOne(t, s, at(6*ms), succeed(bc.Lease()), true)
		ready := getTask(t, s, tenantA, dep.ID)
		wantWaiting(t, ready, "")
		wantState(t, ready, dockettype.StateQueued, 0)
		c := claimOne(t, s, at(7*ms))
		if c.Task.ID != dep.ID {
			t.Fatalf("claimed %s, want the dependent %s", c.Task.ID, dep.ID)
		}
		results, err := s.DependencyResults(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: dep.ID})
		if err != nil {
			t.Fatalf("DependencyResults: %v", err)
		}
		if len(results) != 2 || results[0].ID != a.Task.ID || results[1].ID != b.ID ||
			results[0].State != dockettype.StateSucceeded || string(results[0].Result) != `{"ok":true}` {
			t.Errorf("DependencyResults = %+v, want a then b, succeeded with their results", results)
		}
		if _, err := s.DependencyResults(t.Context(), &store.GetTaskParams{Tenant: tenantB, TaskID: dep.ID}); err == nil {
			t.Error("DependencyResults for another tenant's task: no error, want ErrNotFound")
		}
	})

	su.run(t, "KeyedDependentTakesItsKeySlotWhenReady", func(t *testing.T, s store.Store) {
		a := admitClaimed(t, s, at(0), newItem(tenantA))
		keyed := func(it *store.AdmitItem) *store.AdmitItem { it.ConcurrencyKey = "k"; return it }
		b1 := admitOne(t, s, at(ms), keyed(dependsOn(tenantA, a.Task.ID)))
		b2 := admitOne(t, s, at(2*ms), keyed(dependsOn(tenantA, a.Task.ID)))
		// Waiting on its dependency, a task holds no slot of its key: a
		// task of the key admitted after it runs.
		c := admitOne(t, s, at(3*ms), keyed(newItem(tenantA)))
		wantWaiting(t, getTask(t, s, tenantA, b1.ID), dockettype.WaitingOnDependencies)
		if got := claim(t, s, at(time.Second), dockettype.PoolOnline, 10); len(got) != 1 || got[0].Task.ID != c.ID {
			t.Fatalf("claim = %v, want the key's free-running task %s", claimedIDs(got), c.ID)
		}
		cClaim := getTask(t, s, tenantA, c.ID)
		// Its dependency done, the dependent waits on its key (held by c).
		finishOne(t, s, at(2*time.Second), succeed(a.Lease()), true)
		wantWaiting(t, getTask(t, s, tenantA, b1.ID), dockettype.WaitingOn(store.WaitingOnConcurrencyKey))
		wantWaiting(t, getTask(t, s, tenantA, b2.ID), dockettype.WaitingOn(store.WaitingOnConcurrencyKey))
		if got := claim(t, s, at(3*time.Second), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claim while the key is held = %v, want none", claimedIDs(got))
		}
		finishOne(t, s, at(4*time.Second), succeed(store.Lease{TaskID: c.ID, Epoch: cClaim.LeaseEpoch}), true)
		next := claim(t, s, at(5*time.Second), dockettype.PoolOnline, 10)
		if len(next) != 1 || next[0].Task.ID != b1.ID {
			t.Fatalf("claim after the key was freed = %v, want only %s", claimedIDs(next), b1.ID)
		}
		finishOne(t, s, at(6*time.Second), succeed(next[0].Lease()), true)
		last := claim(t, s, at(7*time.Second), dockettype.PoolOnline, 10)
		if len(last) != 1 || last[0].Task.ID != b2.ID {
			t.Fatalf("claim = %v, want %s", claimedIDs(last), b2.ID)
		}
	})

	su.run(t, "AlreadySucceeded", func(t *testing.T, s store.Store) {
		a := admitClaimed(t, s, at(0), newItem(tenantA))
		finishOne(t, s, at(ms), succeed(a.Lease()), true)
		dep := admitOne(t, s, at(2*ms), dependsOn(tenantA, a.Task.ID))
		wantWaiting(t, dep, "")
		if c := claimOne(t, s, at(3*ms)); c.Task.ID != dep.ID {
			t.Fatalf("claimed %s, want the dependent", c.Task.ID)
		}
	})

	su.run(t, "UnknownOrOtherTenant", func(t *testing.T, s store.Store) {
		other := admitOne(t, s, at(0), newItem(tenantB))
		for name, id := range map[string]string{"unknown": newID(), "other tenant": other.ID} {
			res := admit(t, s, at(ms), dependsOn(tenantA, id))[0]
			if res.Outcome != store.DependencyNotFound {
				t.Errorf("%s dependency: outcome %v, want %v", name, res.Outcome, store.DependencyNotFound)
			}
		}
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 0)
	})

	su.run(t, "FailureCascades", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name string
			end  func(t *testing.T, s store.Store, c *store.ClaimedTask, now time.Time)
			want dockettype.State
		}{
			{"failed", func(t *testing.T, s store.Store, c *store.ClaimedTask, now time.Time) {
				finishOne(t, s, now, fail(c.Lease(), dockettype.CodeWorkflowError), true)
			}, dockettype.StateFailed},
			{"cancelled", func(t *testing.T, s store.Store, c *store.ClaimedTask, now time.Time) {
				cancel(t, s, now, tenantA, c.Task.ID)
			}, dockettype.StateCancelled},
			{"timed out", func(t *testing.T, s store.Store, c *store.ClaimedTask, now time.Time) {
				expireTasks(t, s, now, findOverdue(t, s, now, 10))
			}, dockettype.StateFailed},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := su.open(t)
				first := newItem(tenantA)
				first.DeadlineAt = at(time.Second)
				a := admitClaimed(t, s, at(0), first)
				b := admitOne(t, s, at(ms), dependsOn(tenantA, a.Task.ID))
				c := admitOne(t, s, at(ms), dependsOn(tenantA, b.ID))
				runs := dependsOn(tenantA, b.ID)
				runs.RunOnDependencyFailure = true
				r := admitOne(t, s, at(ms), runs)
				tc.end(t, s, a, at(2*time.Second))
				wantError(t, getTask(t, s, tenantA, b.ID), tc.want, dockettype.CodeDependencyFailed)
				wantError(t, getTask(t, s, tenantA, c.ID), tc.want, dockettype.CodeDependencyFailed)
				wantHistory(t, s, b.ID)
				wantHistory(t, s, c.ID)
				lastEvent(t, s, tenantA, c.ID, dockettype.StateQueued, tc.want, 1)
				got := getTask(t, s, tenantA, r.ID)
				wantState(t, got, dockettype.StateQueued, 0)
				wantWaiting(t, got, "")
				// Everything but the one that runs anyway released its unit.
				wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
				if cl := claimOne(t, s, at(3*time.Second)); cl.Task.ID != r.ID {
					t.Errorf("claimed %s, want the run-anyway dependent %s", cl.Task.ID, r.ID)
				}
			})
		}
	})

	su.run(t, "AlreadyFailed", func(t *testing.T, s store.Store) {
		a := admitClaimed(t, s, at(0), newItem(tenantA))
		finishOne(t, s, at(ms), fail(a.Lease(), dockettype.CodeWorkflowError), true)
		dep := dependsOn(tenantA, a.Task.ID)
		after := newItem(tenantA)
		after.DependsOn = []string{dep.TaskID} // a batch reference
		res := admit(t, s, at(2*ms), dep, after)
		for i, r := range res {
			if r.Outcome != store.Admitted {
				t.Fatalf("item %d: outcome %v, want admitted", i, r.Outcome)
			}
			wantError(t, r.Task, dockettype.StateFailed, dockettype.CodeDependencyFailed)
			wantError(t, getTask(t, s, tenantA, r.Task.ID), dockettype.StateFailed, dockettype.CodeDependencyFailed)
			wantHistory(t, s, r.Task.ID)
		}
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
	})

	su.run(t, "BatchGraph", func(t *testing.T, s store.Store) {
		root := newItem(tenantA)
		left, right := newItem(tenantA), newItem(tenantA)
		left.DependsOn, right.DependsOn = []string{root.TaskID}, []string{root.TaskID}
		join := newItem(tenantA)
		join.DependsOn = []string{left.TaskID, right.TaskID, left.TaskID} // a repeat counts once
		res := admit(t, s, at(0), root, left, right, join)
		for i, r := range res {
			if r.Outcome != store.Admitted {
				t.Fatalf("item %d: outcome %v, want admitted", i, r.Outcome)
			}
		}
		wantWaiting(t, res[0].Task, "")
		wantWaiting(t, res[3].Task, dockettype.WaitingOnDependencies)
		order := []string{}
		for step := 1; len(order) < 4; step++ {
			got := claim(t, s, at(time.Duration(step)*ms), dockettype.PoolOnline, 10)
			if len(got) == 0 {
				t.Fatalf("nothing to claim after %v: the graph stalled", order)
			}
			for _, c := range got {
				order = append(order, c.Task.ID)
				finishOne(t, s, at(time.Duration(step)*ms), succeed(c.Lease()), true)
			}
		}
		if order[0] != root.TaskID || order[3] != join.TaskID {
			t.Errorf("run order %v, want root first and the join last", order)
		}

		// A replayed batch names the same tasks; a later item may depend on a
		// replayed one.
		again := retry(root)
		more := newItem(tenantA)
		more.DependsOn = []string{again.TaskID}
		res = admit(t, s, at(time.Second), again, more)
		if res[0].Outcome != store.Replayed || res[0].Task.ID != root.TaskID || res[1].Outcome != store.Admitted {
			t.Fatalf("replay: outcomes %v %v, want replayed root then admitted", res[0].Outcome, res[1].Outcome)
		}
		if got := getTask(t, s, tenantA, more.TaskID); !slices.Equal(got.DependsOn, []string{root.TaskID}) || got.WaitingOn != "" {
			t.Errorf("dependent of a replayed item: DependsOn %v waiting_on %q, want [root] and ready", got.DependsOn, got.WaitingOn)
		}
	})

	su.run(t, "BatchItemRefused", func(t *testing.T, s store.Store) {
		full := newItem(tenantA)
		full.PoolCapacity = 1
		admitOne(t, s, at(0), newItem(tenantA))
		dep := newItem(tenantA)
		dep.DependsOn = []string{full.TaskID}
		res := admit(t, s, at(ms), full, dep)
		if res[0].Outcome != store.QueueFull || res[1].Outcome != store.DependencyNotFound {
			t.Errorf("outcomes %v, %v; want queue_full, then dependency_not_found", res[0].Outcome, res[1].Outcome)
		}
	})

	su.run(t, "FanIn", func(t *testing.T, s store.Store) {
		deps := admitN(t, s, at(0), tenantA, 50, nil)
		ids := make([]string, len(deps))
		for i, d := range deps {
			ids[i] = d.ID
		}
		join := admitOne(t, s, at(ms), dependsOn(tenantA, ids...))
		claimed := claim(t, s, at(2*ms), dockettype.PoolOnline, 100)
		if len(claimed) != 50 {
			t.Fatalf("claimed %d, want the 50 dependencies alone", len(claimed))
		}
		for i, c := range claimed {
			finishOne(t, s, at(3*ms), succeed(c.Lease()), true)
			if w := getTask(t, s, tenantA, join.ID).WaitingOn; (w == "") != (i == len(claimed)-1) {
				t.Fatalf("after %d of 50 successes waiting_on is %q", i+1, w)
			}
		}
		if c := claimOne(t, s, at(4*ms)); c.Task.ID != join.ID {
			t.Errorf("claimed %s, want the join", c.Task.ID)
		}
	})

	su.run(t, "RunAtAfterDependencies", func(t *testing.T, s store.Store) {
		a := admitClaimed(t, s, at(0), newItem(tenantA))
		it := dependsOn(tenantA, a.Task.ID)
		it.RunAt = at(time.Minute)
		dep := admitOne(t, s, at(ms), it)
		finishOne(t, s, at(2*ms), succeed(a.Lease()), true)
		if got := claim(t, s, at(3*ms), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("claimed %v before run_at", claimedIDs(got))
		}
		if c := claimOne(t, s, at(time.Minute)); c.Task.ID != dep.ID {
			t.Errorf("claimed %s at run_at, want the dependent", c.Task.ID)
		}
	})

	su.run(t, "RetentionKeepsDependedOn", func(t *testing.T, s store.Store) {
		a := admitClaimed(t, s, at(0), newItem(tenantA))
		finishOne(t, s, at(ms), succeed(a.Lease()), true)
		b := admitOne(t, s, at(2*ms), newItem(tenantA))
		dep := admitOne(t, s, at(2*ms), dependsOn(tenantA, a.Task.ID, b.ID))
		if n, err := s.DeleteFinished(t.Context(), &store.DeleteFinishedParams{Before: at(time.Hour), Limit: 10}); err != nil || n != 0 {
			t.Fatalf("DeleteFinished = %d, %v; want 0: a waiting task depends on the only finished one", n, err)
		}
		c := claimOne(t, s, at(3*ms))
		finishOne(t, s, at(4*ms), succeed(c.Lease()), true)
		d := claimOne(t, s, at(5*ms))
		if d.Task.ID != dep.ID {
			t.Fatalf("claimed %s, want the dependent", d.Task.ID)
		}
		if n, err := s.DeleteFinished(t.Context(), &store.DeleteFinishedParams{Before: at(time.Hour), Limit: 10}); err != nil || n != 0 {
			t.Fatalf("DeleteFinished = %d, %v; want 0 while the dependent runs", n, err)
		}
		finishOne(t, s, at(6*ms), succeed(d.Lease()), true)
		if n, err := s.DeleteFinished(t.Context(), &store.DeleteFinishedParams{Before: at(time.Hour), Limit: 10}); err != nil || n != 3 {
			t.Fatalf("DeleteFinished = %d, %v; want all 3 once the dependent finished", n, err)
		}
	})

	su.run(t, "TaskStates", func(t *testing.T, s store.Store) {
		a := admitOne(t, s, at(0), newItem(tenantA))
		b := admitOne(t, s, at(0), newItem(tenantB))
		got, err := s.TaskStates(t.Context(), &store.TaskStatesParams{Tenant: tenantA, IDs: []string{a.ID, b.ID, newID()}})
		if err != nil {
			t.Fatalf("TaskStates: %v", err)
		}
		if len(got) != 1 || got[a.ID] != dockettype.StateQueued {
			t.Errorf("TaskStates = %v, want only a, queued", got)
		}
	})
}
