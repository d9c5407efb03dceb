package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testAdmit(t *testing.T) {
	su.run(t, "NewTask", func(t *testing.T, s store.Store) {
		now := at(0)
		it := newItem(tenantA)
		it.Pool = dockettype.PoolOffline
		it.Priority = 7
		it.MaxAttempts = 4
		it.DeadlineAt = at(10 * time.Minute)
		res := admit(t, s, now, it)[0]
		if res.Outcome != store.Admitted {
			t.Fatalf("outcome = %v, want admitted", res.Outcome)
		}
		for _, c := range []struct {
			name string
			task *dockettype.Task
		}{
			{"returned", res.Task},
			{"stored", getTask(t, s, tenantA, it.TaskID)},
		} {
			t.Run(c.name, func(t *testing.T) {
				wantAdmittedTask(t, c.task, it, now)
			})
		}

		// The key is bound to the task: a retry replays it.
		wantBound(t, s, now, it, it.TaskID)
		// It holds one unit of the offline pool and of its tenant.
		wantUsage(t, s, dockettype.PoolOffline, 1, tenantA, 1)
		wantUsage(t, s, dockettype.PoolOnline, 0, tenantA, 1)

		evs := listEvents(t, s, tenantA, it.TaskID)
		if len(evs) != 1 {
			t.Fatalf("events = %+v, want one admission event", evs)
		}
		ev := evs[0]
		if ev.TaskID != it.TaskID || ev.From != "" || ev.To != dockettype.StateQueued || ev.Epoch != 0 {
			t.Errorf("admission event = %+v, want task %s \"\"→queued epoch 0", ev, it.TaskID)
		}
		wantTime(t, "admission event At", ev.At, now)

		// The input comes back byte for byte with the claim.
		c := claim(t, s, now, dockettype.PoolOffline, 1)
		if len(c) != 1 || !bytes.Equal(c[0].Input, it.Input) {
			t.Fatalf("claimed %d tasks; input %q, want the exact bytes %q", len(c), c[0].Input, it.Input)
		}
	})

	su.run(t, "CreatesTenant", func(t *testing.T, s store.Store) {
		admitOne(t, s, at(0), newItem("newco"))
		ten := getTenant(t, s, "newco")
		if ten.MaxInFlight != 0 || ten.Weight != 1 || ten.InFlight != 1 {
			t.Errorf("tenant = %+v, want MaxInFlight 0 (unlimited), Weight 1, InFlight 1", ten)
		}
	})

	su.run(t, "KeepsTenantLimits", func(t *testing.T, s store.Store) {
		setLimits(t, s, tenantA, 5, 3)
		admitOne(t, s, at(0), newItem(tenantA))
		ten := getTenant(t, s, tenantA)
		if ten.MaxInFlight != 5 || ten.Weight != 3 {
			t.Errorf("tenant after Admit = %+v, want the limits set before (MaxInFlight 5, Weight 3)", ten)
		}
	})

	su.run(t, "Replay", func(t *testing.T, s store.Store) {
		it := newItem(tenantA)
		first := admitOne(t, s, at(0), it)

		again := retry(it)
		res := admit(t, s, at(time.Second), again)[0]
		if res.Outcome != store.Replayed || res.Task == nil || res.Task.ID != first.ID {
			t.Fatalf("replay: outcome %v task %v, want replayed with task %s", res.Outcome, res.Task, first.ID)
		}
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
		_, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: again.TaskID})
		wantErrIs(t, "GetTask of the replay's unused task ID", err, store.ErrNotFound)

		// A replay answers with the task as it is now.
		claimOne(t, s, at(2*time.Second))
		res = admit(t, s, at(3*time.Second), retry(it))[0]
		if res.Outcome != store.Replayed || res.Task == nil || res.Task.ID != first.ID || res.Task.State != dockettype.StateRunning {
			t.Errorf("replay of a running task: outcome %v task %+v, want replayed, task %s running", res.Outcome, res.Task, first.ID)
		}
	})

	su.run(t, "Conflict", func(t *testing.T, s store.Store) {
		it := newItem(tenantA)
		admitOne(t, s, at(0), it)

		other := retry(it)
		other.RequestHash = "different"
		res := admit(t, s, at(time.Second), other)[0]
		if res.Outcome != store.IdempotencyConflict || res.Task != nil {
			t.Fatalf("conflict: outcome %v task %v, want idempotency_conflict with nil task", res.Outcome, res.Task)
		}
		_, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: other.TaskID})
		wantErrIs(t, "GetTask of the conflicting task ID", err, store.ErrNotFound)
		// The binding still names the original request and task.
		wantBound(t, s, at(2*time.Second), it, it.TaskID)
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
	})

	su.run(t, "KeyIsPerTenant", func(t *testing.T, s store.Store) {
		itA := newItem(tenantA)
		a := admitOne(t, s, at(0), itA)
		itB := retry(itA)
		itB.Tenant = tenantB
		b := admitOne(t, s, at(time.Second), itB)
		if b.ID == a.ID || b.Tenant != tenantB {
			t.Errorf("tenant B's task = %s (tenant %s), want a new task %s of %s", b.ID, b.Tenant, itB.TaskID, tenantB)
		}
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantA, 1)
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantB, 1)
	})

	su.run(t, "SameKeyWithinOneCall", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name   string
			hash   func(first string) string
			want   store.AdmitOutcome
			wantID bool // the second result names the first task
		}{
			{"same hash", func(h string) string { return h }, store.Replayed, true},
			{"different hash", func(string) string { return "different" }, store.IdempotencyConflict, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				first := newItem(tenantA)
				second := retry(first)
				second.RequestHash = tc.hash(first.RequestHash)
				third := newItem(tenantA)
				res := admit(t, s, at(0), first, second, third)
				if res[0].Outcome != store.Admitted {
					t.Errorf("first item: %v, want admitted", res[0].Outcome)
				}
				if res[1].Outcome != tc.want {
					t.Errorf("second item (same key): %v, want %v", res[1].Outcome, tc.want)
				}
				if tc.wantID && (res[1].Task == nil || res[1].Task.ID != first.TaskID) {
					t.Errorf("second item task = %v, want the first item's task %s", res[1].Task, first.TaskID)
				}
				if res[2].Outcome != store.Admitted {
					t.Errorf("third item (own key): %v, want admitted: a rejected item must not affect the others", res[2].Outcome)
				}
				_, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: second.TaskID})
				wantErrIs(t, "GetTask of the second item's task ID", err, store.ErrNotFound)
			})
		}
		wantUsage(t, s, dockettype.PoolOnline, 4, tenantA, 4)
	})

	su.run(t, "QueueFull", func(t *testing.T, s store.Store) {
		full := func(tenant string) *store.AdmitItem {
			it := newItem(tenant)
			it.PoolCapacity = 2
			return it
		}
		admitOne(t, s, at(0), full(tenantA))
		admitOne(t, s, at(0), full(tenantA))

		// Capacity is global: another tenant is refused too.
		it := full(tenantB)
		if res := admit(t, s, at(time.Second), it)[0]; res.Outcome != store.QueueFull {
			t.Fatalf("third task in a pool of capacity 2: %v, want queue_full", res.Outcome)
		}
		_, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenantB, TaskID: it.TaskID})
		wantErrIs(t, "GetTask of the refused task", err, store.ErrNotFound)
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantB, 0)

		// A terminal task frees its unit; the same key then succeeds.
		c := claimOne(t, s, at(2*time.Second))
		finishOne(t, s, at(3*time.Second), succeed(c.Lease()), true)
		if res := admit(t, s, at(4*time.Second), it)[0]; res.Outcome != store.Admitted {
			t.Errorf("same key after capacity freed: %v, want admitted", res.Outcome)
		}
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantB, 1)
	})

	su.run(t, "QueueFullWithinOneCall", func(t *testing.T, s store.Store) {
		items := make([]*store.AdmitItem, 3)
		for i := range items {
			items[i] = newItem(tenantA)
			items[i].PoolCapacity = 2
		}
		res := admit(t, s, at(0), items...)
		got := []store.AdmitOutcome{res[0].Outcome, res[1].Outcome, res[2].Outcome}
		want := []store.AdmitOutcome{store.Admitted, store.Admitted, store.QueueFull}
		if got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("outcomes = %v, want %v", got, want)
		}
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantA, 2)
	})

	su.run(t, "QueueFullIsPerPool", func(t *testing.T, s store.Store) {
		in := func(pool dockettype.Pool) *store.AdmitItem {
			it := newItem(tenantA)
			it.Pool = pool
			it.PoolCapacity = 1
			return it
		}
		admitOne(t, s, at(0), in(dockettype.PoolOnline))
		if res := admit(t, s, at(0), in(dockettype.PoolOffline))[0]; res.Outcome != store.Admitted {
			t.Errorf("offline task while online is full: %v, want admitted", res.Outcome)
		}
		if res := admit(t, s, at(0), in(dockettype.PoolOnline))[0]; res.Outcome != store.QueueFull {
			t.Errorf("second online task with capacity 1: %v, want queue_full", res.Outcome)
		}
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 2)
		wantUsage(t, s, dockettype.PoolOffline, 1, tenantA, 2)
	})

	su.run(t, "UnlimitedCapacity", func(t *testing.T, s store.Store) {
		for _, capacity := range []int{0, -1} {
			admitN(t, s, at(0), tenantA, 5, func(it *store.AdmitItem) { it.PoolCapacity = capacity })
		}
		wantUsage(t, s, dockettype.PoolOnline, 10, tenantA, 10)
	})

	su.run(t, "TenantQuotaExceeded", func(t *testing.T, s store.Store) {
		setLimits(t, s, tenantA, 2, 1)
		admitOne(t, s, at(0), newItem(tenantA))
		admitOne(t, s, at(0), newItem(tenantA))

		it := newItem(tenantA)
		if res := admit(t, s, at(time.Second), it)[0]; res.Outcome != store.TenantQuotaExceeded {
			t.Fatalf("third task with MaxInFlight 2: %v, want tenant_quota_exceeded", res.Outcome)
		}
		_, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenantA, TaskID: it.TaskID})
		wantErrIs(t, "GetTask of the refused task", err, store.ErrNotFound)
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantA, 2)

		// Another tenant is not limited by A's quota.
		other := newItem(tenantB)
		other.Pool = dockettype.PoolOffline
		admitOne(t, s, at(time.Second), other)

		c := claimOne(t, s, at(2*time.Second))
		finishOne(t, s, at(3*time.Second), fail(c.Lease(), dockettype.CodeWorkflowError), true)
		if res := admit(t, s, at(4*time.Second), it)[0]; res.Outcome != store.Admitted {
			t.Errorf("same key after a task finished: %v, want admitted", res.Outcome)
		}
		if ten := getTenant(t, s, tenantA); ten.InFlight != 2 {
			t.Errorf("tenant InFlight = %d, want 2", ten.InFlight)
		}
	})

	su.run(t, "TenantQuotaZeroIsUnlimited", func(t *testing.T, s store.Store) {
		setLimits(t, s, tenantA, 0, 1)
		admitN(t, s, at(0), tenantA, 5, nil)
		wantUsage(t, s, dockettype.PoolOnline, 5, tenantA, 5)
	})

	// A client retrying a request it already got admitted must get its task
	// back, not a 429: the replay needs no new unit of capacity.
	su.run(t, "ReplayWhenFull", func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name  string
			limit func(t *testing.T, it *store.AdmitItem)
		}{
			{"pool full", func(t *testing.T, it *store.AdmitItem) { it.PoolCapacity = 1 }},
			{"tenant quota reached", func(t *testing.T, it *store.AdmitItem) { setLimits(t, s, it.Tenant, 1, 1) }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				it := newItem("tenant-" + newID())
				it.Pool = dockettype.PoolOffline
				tc.limit(t, it)
				first := admitOne(t, s, at(0), it)
				res := admit(t, s, at(time.Second), retry(it))[0]
				if res.Outcome != store.Replayed || res.Task == nil || res.Task.ID != first.ID {
					t.Errorf("replay: outcome %v task %v, want replayed with task %s", res.Outcome, res.Task, first.ID)
				}
			})
		}
	})
}

func wantAdmittedTask(t *testing.T, got *dockettype.Task, it *store.AdmitItem, now time.Time) {
	t.Helper()
	if got == nil {
		t.Fatal("task is nil")
	}
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"ID", got.ID, it.TaskID},
		{"Tenant", got.Tenant, it.Tenant},
		{"Author", got.Author, it.Author},
		{"Workflow", got.Workflow, it.Workflow},
		{"Pool", got.Pool, it.Pool},
		{"State", got.State, dockettype.StateQueued},
		{"Attempt", got.Attempt, 0},
		{"MaxAttempts", got.MaxAttempts, it.MaxAttempts},
		{"Priority", got.Priority, it.Priority},
		{"TraceID", got.TraceID, it.TraceID},
		{"ConfigVersion", got.ConfigVersion, it.ConfigVersion},
		{"LeaseEpoch", got.LeaseEpoch, int64(0)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
	wantTime(t, "CreatedAt", got.CreatedAt, now)
	wantTime(t, "DeadlineAt", got.DeadlineAt, it.DeadlineAt)
	if got.StartedAt != nil || got.FinishedAt != nil || got.Error != nil || len(got.Result) != 0 {
		t.Errorf("StartedAt %v FinishedAt %v Error %v Result %q, want all empty for a new task", got.StartedAt, got.FinishedAt, got.Error, got.Result)
	}
}
