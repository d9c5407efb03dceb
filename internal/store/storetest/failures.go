package storetest

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

var operator = dockettype.Actor{KeyID: "key-op", Role: dockettype.RoleAdmin}

func retryTasks(t *testing.T, s store.Store, now time.Time, items ...*store.RetryItem) []store.RetryResult {
	t.Helper()
	res, err := s.Retry(t.Context(), &store.RetryParams{Now: now, By: operator, Items: items})
	if err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if len(res) != len(items) {
		t.Fatalf("Retry returned %d results for %d items", len(res), len(items))
	}
	return res
}

func retryItem(tenant, id string) *store.RetryItem {
	return &store.RetryItem{TaskID: id, Tenant: tenant, Queue: store.PoolQueue(dockettype.PoolOnline)}
}

// failedTask admits it, claims it and fails it at now; it returns the
// claim.
func failedTask(t *testing.T, s store.Store, now time.Time, it *store.AdmitItem) *store.ClaimedTask {
	t.Helper()
	c := admitClaimed(t, s, now, it)
	finishOne(t, s, now, fail(c.Lease(), dockettype.CodeWorkflowError), true)
	return c
}

func (su suite) testRetry(t *testing.T) {
	su.run(t, "Failed", func(t *testing.T, s store.Store) {
		it := newItem(tenantA)
		c := failedTask(t, s, at(0), it)
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
		now := at(time.Minute)
		res := retryTasks(t, s, now, retryItem(tenantA, c.Task.ID))[0]
		if res.Outcome != store.Retried || res.Task == nil {
			t.Fatalf("Retry of a failed task: %v, want retried", res.Outcome)
		}
		wantState(t, res.Task, dockettype.StateQueued, c.Task.LeaseEpoch+1)
		if res.Task.Attempt != 0 || res.Task.FinishedAt != nil || res.Task.Error != nil {
			t.Errorf("retried task: attempt %d, finished %v, error %v; want attempt 0, not finished, no error",
				res.Task.Attempt, res.Task.FinishedAt, res.Task.Error)
		}
		// Its original timeout (an hour) counts from the retry.
		if want := now.Add(time.Hour); !res.Task.DeadlineAt.Equal(want) {
			t.Errorf("retried task's deadline = %v, want %v", res.Task.DeadlineAt, want)
		}
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
		ev := lastEvent(t, s, tenantA, c.Task.ID, dockettype.StateFailed, dockettype.StateQueued, c.Task.LeaseEpoch+1)
		if ev.Code != dockettype.CodeRetried || ev.By == nil || *ev.By != operator || !ev.At.Equal(now) {
			t.Errorf("retry event: code %q by %v at %v, want %s by %v at %v", ev.Code, ev.By, ev.At, dockettype.CodeRetried, operator, now)
		}
		// Its input is as admitted, for its tenant only.
		if in, err := s.GetInput(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: c.Task.ID}); err != nil || !bytes.Equal(in, input) {
			t.Errorf("GetInput = %q, %v; want %q", in, err, input)
		}
		if _, err := s.GetInput(t.Context(), &store.GetTaskParams{Tenant: tenantB, TaskID: c.Task.ID}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetInput of another tenant's task: %v, want ErrNotFound", err)
		}
		// The same key still answers with this task.
		wantBound(t, s, now, it, c.Task.ID)

		// The old lease stays fenced out; the new claim runs the same input
		// with a whole attempt budget.
		finishOne(t, s, now, succeed(c.Lease()), false)
		again := claimOne(t, s, at(2*time.Minute))
		if again.Task.ID != c.Task.ID || again.Task.Attempt != 1 || !bytes.Equal(again.Input, input) {
			t.Errorf("claim after retry: task %s attempt %d input %q, want %s attempt 1 input %q",
				again.Task.ID, again.Task.Attempt, again.Input, c.Task.ID, input)
		}
		finishOne(t, s, at(3*time.Minute), succeed(again.Lease()), true)
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 0)
		wantHistory(t, s, c.Task.ID)
	})

	su.run(t, "KeyedTaskWaitsForASlotOfItsKey", func(t *testing.T, s store.Store) {
		tasks := admitN(t, s, at(0), tenantA, 2, func(it *store.AdmitItem) { it.ConcurrencyKey = "c1" })
		first := claim(t, s, at(time.Second), dockettype.PoolOnline, 10)
		if len(first) != 1 || first[0].Task.ID != tasks[0].ID {
			t.Fatalf("claim = %v, want %s", claimedIDs(first), tasks[0].ID)
		}
		finishOne(t, s, at(2*time.Second), fail(first[0].Lease(), dockettype.CodeWorkflowError), true)
		// The key's slot went to its second task; the retried first one
		// waits for it.
		res := retryTasks(t, s, at(3*time.Second), retryItem(tenantA, tasks[0].ID))[0]
		if res.Outcome != store.Retried {
			t.Fatalf("Retry of a failed keyed task: %v, want retried", res.Outcome)
		}
		if w := getTask(t, s, tenantA, tasks[0].ID).WaitingOn; string(w) != store.WaitingOnConcurrencyKey {
			t.Errorf("the retried task waits on %v, want concurrency_key", w)
		}
		second := claim(t, s, at(4*time.Second), dockettype.PoolOnline, 10)
		if len(second) != 1 || second[0].Task.ID != tasks[1].ID {
			t.Fatalf("claim = %v, want only the key's slot holder %s", claimedIDs(second), tasks[1].ID)
		}
		finishOne(t, s, at(5*time.Second), fail(second[0].Lease(), dockettype.CodeWorkflowError), true)
		again := claim(t, s, at(6*time.Second), dockettype.PoolOnline, 10)
		if len(again) != 1 || again[0].Task.ID != tasks[0].ID {
			t.Fatalf("claim after the slot holder ended = %v, want the retried %s", claimedIDs(again), tasks[0].ID)
		}
		// A retry while the key is free takes its slot at once.
		finishOne(t, s, at(7*time.Second), succeed(again[0].Lease()), true)
		res = retryTasks(t, s, at(8*time.Second), retryItem(tenantA, tasks[1].ID))[0]
		if res.Outcome != store.Retried {
			t.Fatalf("Retry: %v, want retried", res.Outcome)
		}
		if w := getTask(t, s, tenantA, tasks[1].ID).WaitingOn; w != "" {
			t.Errorf("a task retried while its key is free waits on %v, want nothing", w)
		}
		last := claim(t, s, at(9*time.Second), dockettype.PoolOnline, 10)
		if len(last) != 1 || last[0].Task.ID != tasks[1].ID {
			t.Fatalf("claim = %v, want %s", claimedIDs(last), tasks[1].ID)
		}
		if got := claim(t, s, at(9*time.Second+ms), dockettype.PoolOnline, 10); len(got) != 0 {
			t.Fatalf("second claim = %v, want none", claimedIDs(got))
		}
	})

	su.run(t, "TimedOutAndCancelled", func(t *testing.T, s store.Store) {
		cancelled := admitOne(t, s, at(0), newItem(tenantA))
		cancel(t, s, at(time.Second), tenantA, cancelled.ID)
		it := newItem(tenantA)
		it.DeadlineAt = at(time.Second)
		overdue := admitOne(t, s, at(0), it)
		if err := sweepOverdue(t, s, at(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		res := retryTasks(t, s, at(time.Minute), retryItem(tenantA, cancelled.ID), retryItem(tenantA, overdue.ID))
		for i, r := range res {
			if r.Outcome != store.Retried {
				t.Errorf("item %d: %v, want retried", i, r.Outcome)
			}
		}
		lastEvent(t, s, tenantA, cancelled.ID, dockettype.StateCancelled, dockettype.StateQueued, 2)
		lastEvent(t, s, tenantA, overdue.ID, dockettype.StateTimedOut, dockettype.StateQueued, 2)
		if got := getTask(t, s, tenantA, overdue.ID).DeadlineAt; !got.Equal(at(time.Minute + time.Second)) {
			t.Errorf("deadline after retry = %v, want its timeout (1s) after the retry", got)
		}
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantA, 2)
		if got := claim(t, s, at(time.Minute), dockettype.PoolOnline, 10); len(got) != 2 {
			t.Errorf("claim after retry: %d tasks, want 2", len(got))
		}
	})

	su.run(t, "NotRetryable", func(t *testing.T, s store.Store) {
		done := admitClaimed(t, s, at(0), newItem(tenantB))
		finishOne(t, s, at(time.Second), succeed(done.Lease()), true)
		queued := admitOne(t, s, at(0), newItem(tenantA))
		res := retryTasks(t, s, at(time.Minute),
			retryItem(tenantA, queued.ID), retryItem(tenantB, done.Task.ID), retryItem(tenantA, done.Task.ID),
			retryItem(tenantA, newID()))
		if res[0].Outcome != store.NotRetryable || res[0].Task == nil || res[0].Task.State.Terminal() {
			t.Errorf("retry of a live task: %v, want not_retryable with the task", res[0].Outcome)
		}
		if res[1].Outcome != store.NotRetryable || res[1].Task == nil || res[1].Task.State != dockettype.StateSucceeded {
			t.Errorf("retry of a succeeded task: %v, want not_retryable with the task", res[1].Outcome)
		}
		if res[2].Outcome != store.RetryNotFound || res[3].Outcome != store.RetryNotFound {
			t.Errorf("retry of another tenant's task, of an unknown task: %v, %v, want not_found", res[2].Outcome, res[3].Outcome)
		}
		lastEvent(t, s, tenantB, done.Task.ID, dockettype.StateRunning, dockettype.StateSucceeded, done.Task.LeaseEpoch)
	})

	su.run(t, "Twice", func(t *testing.T, s store.Store) {
		c := failedTask(t, s, at(0), newItem(tenantA))
		res := retryTasks(t, s, at(time.Second), retryItem(tenantA, c.Task.ID), retryItem(tenantA, c.Task.ID))
		if res[0].Outcome != store.Retried || res[1].Outcome != store.NotRetryable {
			t.Errorf("one task twice in a call: %v, %v, want retried then not_retryable", res[0].Outcome, res[1].Outcome)
		}
		if r := retryTasks(t, s, at(2*time.Second), retryItem(tenantA, c.Task.ID))[0]; r.Outcome != store.NotRetryable {
			t.Errorf("retry of the queued task: %v, want not_retryable", r.Outcome)
		}
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
	})

	su.run(t, "Limits", func(t *testing.T, s store.Store) {
		a := failedTask(t, s, at(0), newItem(tenantA))
		b := failedTask(t, s, at(0), newItem(tenantA))
		admitOne(t, s, at(0), newItem(tenantB)) // holds the pool's one unit
		full := retryItem(tenantA, a.Task.ID)
		full.PoolCapacity = 1
		if r := retryTasks(t, s, at(time.Second), full)[0]; r.Outcome != store.RetryQueueFull {
			t.Errorf("retry into a full pool: %v, want queue_full", r.Outcome)
		}
		setLimits(t, s, tenantA, 1, 1)
		res := retryTasks(t, s, at(time.Second), retryItem(tenantA, a.Task.ID), retryItem(tenantA, b.Task.ID))
		if res[0].Outcome != store.Retried || res[1].Outcome != store.RetryTenantQuotaExceeded {
			t.Errorf("two retries with a tenant limit of 1: %v, %v, want retried then tenant_quota_exceeded", res[0].Outcome, res[1].Outcome)
		}
		if got := getTask(t, s, tenantA, b.Task.ID); got.State != dockettype.StateFailed {
			t.Errorf("refused retry left the task %s, want failed", got.State)
		}
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantA, 1)
	})

	su.run(t, "Concurrent", func(t *testing.T, s store.Store) {
		c := failedTask(t, s, at(0), newItem(tenantA))
		f := fork(t, s, "second", 2)
		got := racingRetries(t, at(time.Second), map[store.Store]*store.RetryItem{
			s: retryItem(tenantA, c.Task.ID), f: retryItem(tenantA, c.Task.ID)})
		if !slices.Equal(got, []store.RetryOutcome{store.Retried, store.NotRetryable}) {
			t.Errorf("two concurrent retries: %v, want one retried, one not_retryable", got)
		}
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
	})

	// Two retries of different tasks race for a pool's last unit of room
	// (a backend that locks its gates after the revive checks them again
	// under the locks): one is retried, the other refused, never both.
	su.run(t, "ConcurrentForTheLastRoom", func(t *testing.T, s store.Store) {
		f := fork(t, s, "second", 2)
		const rounds = 10
		var failed []*store.ClaimedTask
		for range 2 * rounds {
			failed = append(failed, failedTask(t, s, at(0), newItem(tenantA)))
		}
		for round := range rounds {
			admitOne(t, s, at(0), newItem(tenantB)) // the pool holds 2*round+1 live tasks
			capacity := 2*round + 2                 // one unit of room
			tasks := failed[2*round : 2*round+2]
			items := map[store.Store]*store.RetryItem{s: retryItem(tenantA, tasks[0].Task.ID), f: retryItem(tenantA, tasks[1].Task.ID)}
			for _, it := range items {
				it.PoolCapacity = capacity
			}
			got := racingRetries(t, at(time.Second), items)
			if !slices.Equal(got, []store.RetryOutcome{store.Retried, store.RetryQueueFull}) {
				t.Fatalf("round %d: two retries for one unit of room: %v, want one retried, one queue_full", round, got)
			}
			wantUsage(t, s, dockettype.PoolOnline, capacity, tenantA, round+1)
		}
	})
}

// racingRetries runs one retry per store at once and returns their
// outcomes, sorted (0 for a call that failed, reported).
func racingRetries(t *testing.T, now time.Time, items map[store.Store]*store.RetryItem) []store.RetryOutcome {
	t.Helper()
	results := make(chan store.RetryOutcome, len(items))
	for st, it := range items {
		go func() {
			res, err := st.Retry(t.Context(), &store.RetryParams{Now: now, By: operator, Items: []*store.RetryItem{it}})
			if err != nil {
				t.Errorf("Retry: %v", err)
				results <- 0
				return
			}
			results <- res[0].Outcome
		}()
	}
	got := make([]store.RetryOutcome, 0, len(items))
	for range items {
		got = append(got, <-results)
	}
	slices.Sort(got)
	return got
}

func (su suite) testBulk(t *testing.T) {
	su.run(t, "MatchTasks", func(t *testing.T, s store.Store) {
		var failed []string
		for range 5 {
			failed = append(failed, failedTask(t, s, at(0), newItem(tenantA)).Task.ID)
		}
		other := newItem(tenantA)
		other.Workflow = "demo.other"
		failedTask(t, s, at(0), other)
		failedTask(t, s, at(0), newItem(tenantB))
		admitOne(t, s, at(0), newItem(tenantA))
		f := store.TaskFilter{Tenant: tenantA, State: dockettype.StateFailed, Workflow: "demo.echo",
			ErrorCode: dockettype.CodeWorkflowError}
		var got []string
		after := ""
		for range 10 {
			page, err := s.MatchTasks(t.Context(), &store.MatchTasksParams{Filter: f, After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page {
				got = append(got, m.TaskID)
				if m.State != dockettype.StateFailed || m.Tenant != tenantA {
					t.Errorf("matched %+v, want a failed task of %s", m, tenantA)
				}
			}
			if len(page) < 2 {
				break
			}
			after = page[len(page)-1].TaskID
		}
		slices.Sort(failed)
		if !slices.Equal(got, failed) {
			t.Errorf("matched %v, want %v in ID order", got, failed)
		}
		all, err := s.MatchTasks(t.Context(), &store.MatchTasksParams{Filter: store.TaskFilter{State: dockettype.StateFailed}, Limit: 100})
		if err != nil || len(all) != 7 {
			t.Errorf("failed tasks of every tenant: %d (%v), want 7", len(all), err)
		}
		one, err := s.MatchTasks(t.Context(), &store.MatchTasksParams{TaskID: failed[2], Limit: 10})
		if err != nil || len(one) != 1 || one[0].TaskID != failed[2] || one[0].Workflow != "demo.echo" || one[0].Pool != dockettype.PoolOnline {
			t.Errorf("match by ID: %+v (%v), want just %s", one, err, failed[2])
		}
		before := at(-time.Second)
		none, err := s.MatchTasks(t.Context(), &store.MatchTasksParams{Filter: store.TaskFilter{CreatedBefore: &before}, Limit: 100})
		if err != nil || len(none) != 0 {
			t.Errorf("created before every task: %d (%v), want none", len(none), err)
		}
	})

	su.run(t, "DeleteAndDeadLetters", func(t *testing.T, s store.Store) {
		it := newItem(tenantA)
		a := failedTask(t, s, at(0), it)
		b := failedTask(t, s, at(time.Second), newItem(tenantA))
		failedTask(t, s, at(0), newItem(tenantB))
		live := admitOne(t, s, at(0), newItem(tenantA))
		groups, err := s.DeadLetters(t.Context(), &store.DeadLettersParams{Tenant: tenantA})
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) != 1 || groups[0].Count != 2 || groups[0].Workflow != "demo.echo" ||
			groups[0].Code != dockettype.CodeWorkflowError || !groups[0].Oldest.Equal(at(0)) || !groups[0].Newest.Equal(at(time.Second)) {
			t.Errorf("dead letters of %s = %+v, want one group of 2 from 0s to 1s", tenantA, groups)
		}
		if all, err := s.DeadLetters(t.Context(), &store.DeadLettersParams{}); err != nil || len(all) != 2 {
			t.Errorf("dead letters of every tenant: %+v (%v), want 2 groups", all, err)
		}
		deleted, err := s.DeleteTasks(t.Context(), &store.DeleteTasksParams{Tenant: tenantA,
			TaskIDs: []string{a.Task.ID, live.ID, b.Task.ID, newID()}})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(deleted)
		want := []string{a.Task.ID, b.Task.ID}
		slices.Sort(want)
		if !slices.Equal(deleted, want) {
			t.Errorf("DeleteTasks deleted %v, want the terminal ones %v", deleted, want)
		}
		if _, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: a.Task.ID}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetTask of a deleted task: %v, want ErrNotFound", err)
		}
		wantHeld(t, s, live.ID)
		wantUnbound(t, s, at(2*time.Second), it)
	})

	su.run(t, "Jobs", func(t *testing.T, s store.Store) {
		job := &store.BulkJob{ID: newID(), Action: store.BulkRetry, By: operator, CreatedAt: at(0),
			Filter: store.TaskFilter{Tenant: tenantA, State: dockettype.StateFailed}}
		if err := s.CreateBulkJob(t.Context(), job); err != nil {
			t.Fatal(err)
		}
		lease := func(now time.Time, owner string) *store.BulkJob {
			t.Helper()
			j, err := s.LeaseBulkJob(t.Context(), &store.LeaseBulkJobParams{Now: now, Owner: owner, TTL: ttl})
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			return j
		}
		j := lease(at(0), "node-1")
		if j == nil || j.ID != job.ID || j.State != store.BulkRunning || j.Version != 2 || j.Filter != job.Filter || j.By != operator {
			t.Fatalf("leased %+v, want the job at version 2", j)
		}
		if other := lease(at(time.Second), "node-2"); other != nil {
			t.Errorf("a second node leased %s while the first holds it", other.ID)
		}
		adv := func(p store.AdvanceBulkJobParams) bool {
			t.Helper()
			p.ID, p.TTL = job.ID, ttl
			ok, err := s.AdvanceBulkJob(t.Context(), &p)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !adv(store.AdvanceBulkJobParams{Now: at(time.Second), Version: 2, Owner: "node-1", Cursor: "c1", Matched: 3, Done: 2, Skipped: 1}) {
			t.Fatal("advance under the lease refused")
		}
		if adv(store.AdvanceBulkJobParams{Now: at(time.Second), Version: 2, Owner: "node-1", Cursor: "c2", Matched: 1}) {
			t.Error("advance at a stale version applied")
		}
		// The lease (renewed at 1s) expires; another node takes over where
		// the cursor stands.
		j = lease(at(time.Second+ttl), "node-2")
		if j == nil || j.Cursor != "c1" || j.Matched != 3 || j.Done != 2 || j.Skipped != 1 || j.LeaseOwner != "node-2" {
			t.Fatalf("taken over: %+v, want node-2 at cursor c1 with the counts", j)
		}
		if adv(store.AdvanceBulkJobParams{Now: at(time.Minute), Version: j.Version, Owner: "node-1", Cursor: "c3"}) {
			t.Error("advance by the node that lost the lease applied")
		}
		if !adv(store.AdvanceBulkJobParams{Now: at(time.Minute), Version: j.Version, Owner: "node-2", Cursor: "c3", Matched: 1, Failed: 1, Last: true}) {
			t.Fatal("last advance refused")
		}
		got, err := s.GetBulkJob(t.Context(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != store.BulkDone || got.Matched != 4 || got.Failed != 1 || got.FinishedAt == nil || !got.FinishedAt.Equal(at(time.Minute)) {
			t.Errorf("finished job: %+v, want done, matched 4, failed 1, finished at 1m", got)
		}
		if j := lease(at(time.Hour), "node-3"); j != nil {
			t.Errorf("leased a finished job %s", j.ID)
		}

		// Cancel stops a running job: its node's next advance is refused.
		second := &store.BulkJob{ID: newID(), Action: store.BulkCancel, By: operator, CreatedAt: at(0)}
		if err := s.CreateBulkJob(t.Context(), second); err != nil {
			t.Fatal(err)
		}
		j = lease(at(time.Hour), "node-1")
		if j == nil || j.ID != second.ID {
			t.Fatalf("leased %+v, want the second job", j)
		}
		c, err := s.CancelBulkJob(t.Context(), second.ID, at(time.Hour+time.Second))
		if err != nil || c.State != store.BulkCancelled {
			t.Fatalf("CancelBulkJob: %+v, %v; want cancelled", c, err)
		}
		if ok, err := s.AdvanceBulkJob(t.Context(), &store.AdvanceBulkJobParams{Now: at(time.Hour + 2*time.Second), ID: second.ID,
			Version: j.Version, Owner: "node-1", TTL: ttl}); ok || err != nil {
			t.Errorf("advance of a cancelled job: %v, %v; want refused", ok, err)
		}
		if c, err := s.CancelBulkJob(t.Context(), job.ID, at(time.Hour)); err != nil || c.State != store.BulkDone {
			t.Errorf("cancel of a done job: %+v, %v; want it unchanged", c, err)
		}
		if _, err := s.CancelBulkJob(t.Context(), newID(), at(time.Hour)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("cancel of an unknown job: %v, want ErrNotFound", err)
		}
	})
}
