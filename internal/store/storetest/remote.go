package storetest

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// remoteWorkflow is the remote workflow the cases below admit tasks of.
const remoteWorkflow = "images.resize"

// remoteItem is an item of the remote workflow: it waits in the workflow's
// queue of the online pool.
func remoteItem(tenant string) *store.AdmitItem {
	it := newItem(tenant)
	it.Workflow = remoteWorkflow
	it.Queue = store.RemoteQueue(dockettype.PoolOnline, remoteWorkflow)
	return it
}

func claimQueue(t *testing.T, s store.Store, now time.Time, q store.Queue, tenant string, limit int) []*store.ClaimedTask {
	t.Helper()
	got, err := s.Claim(t.Context(), &store.ClaimParams{Now: now, Queue: q, Tenant: tenant, Owner: "worker-1", Limit: limit, LeaseTTL: ttl})
	if err != nil {
		t.Fatalf("Claim %s: %v", q, err)
	}
	return got
}

func (su suite) testRemote(t *testing.T) {
	remote := store.RemoteQueue(dockettype.PoolOnline, remoteWorkflow)

	su.run(t, "QueuesAreApart", func(t *testing.T, s store.Store) {
		// The pool's own queue and a remote workflow's queue of the same
		// pool are claimed apart: the node's workers never take a remote
		// task, and a remote worker never takes a built-in one.
		own := admitOne(t, s, at(0), newItem(tenantA))
		far := admitOne(t, s, at(0), remoteItem(tenantA))
		if got := claimQueue(t, s, at(0), store.PoolQueue(dockettype.PoolOnline), "", 10); len(got) != 1 || got[0].Task.ID != own.ID {
			t.Fatalf("pool queue claimed %v, want only the built-in task %s", claimedIDs(got), own.ID)
		}
		got := claimQueue(t, s, at(0), remote, "", 10)
		if len(got) != 1 || got[0].Task.ID != far.ID {
			t.Fatalf("remote queue claimed %v, want only the remote task %s", claimedIDs(got), far.ID)
		}
		if task := got[0].Task; task.Pool != dockettype.PoolOnline || task.Workflow != remoteWorkflow || task.Attempt != 1 || task.LeaseEpoch != 1 {
			t.Errorf("claimed remote task %+v, want pool online, its workflow, attempt 1, epoch 1", task)
		}
		if !bytes.Equal(got[0].Input, input) {
			t.Errorf("claimed input %q, want the admitted bytes %q", got[0].Input, input)
		}
		// Both count against the one pool's capacity and the tenant's limit.
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantA, 2)
		pools, _ := stats(t, s)
		if p := pools[dockettype.PoolOnline]; p.Running != 2 || p.RemoteRunning != 1 {
			t.Errorf("online running = %d (remote %d), want 2 (its own queue and the remote one), 1 remote", p.Running, p.RemoteRunning)
		}
		// A remote task's outcome releases its pool's unit.
		finishOne(t, s, at(time.Second), succeed(got[0].Lease()), true)
		wantUsage(t, s, dockettype.PoolOnline, 1, tenantA, 1)
	})

	su.run(t, "CapacityCountsRemote", func(t *testing.T, s store.Store) {
		it := remoteItem(tenantA)
		it.PoolCapacity = 1
		admitOne(t, s, at(0), it)
		next := newItem(tenantB)
		next.PoolCapacity = 1
		if r := admit(t, s, at(0), next)[0]; r.Outcome != store.QueueFull {
			t.Errorf("a built-in task over a pool filled by a remote one: %v, want queue_full", r.Outcome)
		}
	})

	su.run(t, "TenantFilter", func(t *testing.T, s store.Store) {
		a := admitN(t, s, at(0), tenantA, 3, func(it *store.AdmitItem) { *it = *remoteItem(tenantA) })
		b := admitN(t, s, at(0), tenantB, 3, func(it *store.AdmitItem) { *it = *remoteItem(tenantB) })
		got := claimQueue(t, s, at(0), remote, tenantB, 10)
		if !sameSet(claimedIDs(got), taskIDsOf(b)) {
			t.Errorf("claim for tenant %s took %v, want its own tasks %v", tenantB, claimedIDs(got), taskIDsOf(b))
		}
		// The filtered claim left the other tenant's ready count intact:
		// an unfiltered claim now serves it.
		got = claimQueue(t, s, at(0), remote, "", 10)
		if !sameSet(claimedIDs(got), taskIDsOf(a)) {
			t.Errorf("unfiltered claim took %v, want %v", claimedIDs(got), taskIDsOf(a))
		}
	})

	su.run(t, "DelayedPromotedPerQueue", func(t *testing.T, s store.Store) {
		it := remoteItem(tenantA)
		it.RunAt = at(5 * time.Second)
		task := admitOne(t, s, at(0), it)
		if got := claimQueue(t, s, at(4*time.Second), remote, "", 10); len(got) != 0 {
			t.Fatalf("claimed %v before run_at", claimedIDs(got))
		}
		if got := claimQueue(t, s, at(5*time.Second), store.PoolQueue(dockettype.PoolOnline), "", 10); len(got) != 0 {
			t.Fatalf("the pool queue claimed the remote task %v", claimedIDs(got))
		}
		if got := claimQueue(t, s, at(5*time.Second), remote, "", 10); len(got) != 1 || got[0].Task.ID != task.ID {
			t.Fatalf("remote claim at run_at took %v, want %s", claimedIDs(got), task.ID)
		}
	})

	su.run(t, "RecoveryAndDeadlineNameTheQueue", func(t *testing.T, s store.Store) {
		it := remoteItem(tenantA)
		it.DeadlineAt = at(time.Hour)
		admitOne(t, s, at(0), it)
		c := claimQueue(t, s, at(0), remote, "", 1)[0]
		found := findExpired(t, s, at(ttl+time.Second), 10)
		if len(found) != 1 || found[0].Queue != remote || found[0].Queue.Pool() != dockettype.PoolOnline {
			t.Fatalf("expired leases %+v, want the remote task in its queue", found)
		}
		overdue := findOverdue(t, s, at(2*time.Hour), 10)
		if len(overdue) != 1 || overdue[0].Queue != remote || overdue[0].TaskID != c.Task.ID {
			t.Fatalf("overdue %+v, want the remote task in its queue", overdue)
		}
	})

	su.run(t, "Workflows", func(t *testing.T, s store.Store) {
		w, created, err := s.PutWorkflow(t.Context(), &store.PutWorkflowParams{Now: at(0), Name: "b.wf", Pool: dockettype.PoolOffline,
			TimeoutMS: 5000, MaxAttempts: 4})
		if err != nil || !created {
			t.Fatalf("PutWorkflow: created %v, %v", created, err)
		}
		if w.Name != "b.wf" || w.Pool != dockettype.PoolOffline || w.TimeoutMS != 5000 || w.MaxAttempts != 4 || !w.CreatedAt.Equal(at(0)) {
			t.Errorf("PutWorkflow returned %+v", w)
		}
		if _, _, err := s.PutWorkflow(t.Context(), &store.PutWorkflowParams{Now: at(0), Name: "a.wf", Pool: dockettype.PoolOnline}); err != nil {
			t.Fatal(err)
		}
		w, created, err = s.PutWorkflow(t.Context(), &store.PutWorkflowParams{Now: at(time.Second), Name: "b.wf", Pool: dockettype.PoolOnline})
		if err != nil || created {
			t.Fatalf("PutWorkflow again: created %v, %v; want a replacement", created, err)
		}
		if w.Pool != dockettype.PoolOnline || w.TimeoutMS != 0 || !w.CreatedAt.Equal(at(0)) || !w.UpdatedAt.Equal(at(time.Second)) {
			t.Errorf("replaced workflow %+v, want pool online, no timeout, created at 0, updated at 1s", w)
		}
		got, err := s.GetWorkflow(t.Context(), "b.wf")
		if err != nil || *got != *w {
			t.Errorf("GetWorkflow = %+v, %v; want %+v", got, err, w)
		}
		list, err := s.ListWorkflows(t.Context())
		if err != nil || len(list) != 2 || list[0].Name != "a.wf" || list[1].Name != "b.wf" {
			t.Fatalf("ListWorkflows = %v, %v; want a.wf, b.wf", list, err)
		}
		if err := s.DeleteWorkflow(t.Context(), "a.wf"); err != nil {
			t.Fatal(err)
		}
		wantErrIs(t, "DeleteWorkflow again", s.DeleteWorkflow(t.Context(), "a.wf"), store.ErrNotFound)
		_, err = s.GetWorkflow(t.Context(), "a.wf")
		wantErrIs(t, "GetWorkflow after delete", err, store.ErrNotFound)
		_, _, err = s.PutWorkflow(t.Context(), &store.PutWorkflowParams{Now: at(0), Name: "c.wf", Pool: "nowhere"})
		wantErrIs(t, "PutWorkflow with a bad pool", err, store.ErrInvalid)
	})

	su.run(t, "LeaseKey", func(t *testing.T, s store.Store) {
		first := bytes.Repeat([]byte{1}, 32)
		got, err := s.LeaseKey(t.Context(), first)
		if err != nil || !bytes.Equal(got, first) {
			t.Fatalf("LeaseKey = %x, %v; want the first candidate stored", got, err)
		}
		// Every later caller (another node) gets the stored key, not its own.
		got, err = fork(t, s, "other-node", 1).LeaseKey(t.Context(), bytes.Repeat([]byte{2}, 32))
		if err != nil || !bytes.Equal(got, first) {
			t.Fatalf("LeaseKey on another handle = %x, %v; want the key stored first", got, err)
		}
		_, err = s.LeaseKey(t.Context(), []byte("short"))
		wantErrIs(t, "LeaseKey with a short candidate", err, store.ErrInvalid)
	})

	su.run(t, "Workers", func(t *testing.T, s store.Store) {
		w1 := &store.Worker{ID: "host-1", KeyID: "key_1", Tenant: tenantA, Workflows: []string{"a", "b"}, Slots: 8, Leases: 3,
			SDK: "python/0.1.0", LastSeenAt: at(time.Second)}
		w2 := &store.Worker{ID: "host-2", KeyID: "key_2", Tenant: tenantB, AllTenants: true, Workflows: []string{"a"}, Slots: 2,
			LastSeenAt: at(2 * time.Second)}
		if err := s.UpsertWorkers(t.Context(), []*store.Worker{w1, w2}); err != nil {
			t.Fatal(err)
		}
		// A later sighting updates the row; a stale one (another node
		// flushing late) never moves last_seen_at back.
		w1b := *w1
		w1b.Leases, w1b.LastSeenAt = 5, at(3*time.Second)
		stale := *w2
		stale.LastSeenAt = at(0)
		if err := s.UpsertWorkers(t.Context(), []*store.Worker{&w1b, &stale}); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListWorkers(t.Context(), at(0))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID != "host-1" || got[0].Leases != 5 || !got[0].LastSeenAt.Equal(at(3*time.Second)) ||
			!slices.Equal(got[0].Workflows, []string{"a", "b"}) || got[0].SDK != "python/0.1.0" || got[0].Slots != 8 {
			t.Fatalf("ListWorkers = %+v, want host-1 (5 leases, seen at 3s) first", got)
		}
		if !got[1].AllTenants || !got[1].LastSeenAt.Equal(at(2*time.Second)) {
			t.Errorf("host-2 = %+v, want all tenants, last seen at 2s (not moved back)", got[1])
		}
		if got, _ := s.ListWorkers(t.Context(), at(2500*ms)); len(got) != 1 {
			t.Errorf("workers seen since 2.5s = %d, want 1", len(got))
		}
		n, err := s.DeleteWorkersBefore(t.Context(), at(2500*ms))
		if err != nil || n != 1 {
			t.Errorf("DeleteWorkersBefore = %d, %v; want 1", n, err)
		}
	})

	su.run(t, "WorkerKeys", func(t *testing.T, s store.Store) {
		k, err := s.CreateAPIKey(t.Context(), &store.CreateAPIKeyParams{Now: at(0), ID: "key_w", Hash: "hash-w", Tenant: tenantA,
			Principal: "fleet", Role: dockettype.RoleWorker, AllTenants: true})
		if err != nil || k.Role != dockettype.RoleWorker || !k.AllTenants {
			t.Fatalf("CreateAPIKey(worker, all tenants) = %+v, %v", k, err)
		}
		got, err := s.LookupAPIKey(t.Context(), "hash-w")
		if err != nil || got.Role != dockettype.RoleWorker || !got.AllTenants {
			t.Errorf("LookupAPIKey = %+v, %v; want the worker key for all tenants", got, err)
		}
		_, err = s.CreateAPIKey(t.Context(), &store.CreateAPIKeyParams{Now: at(0), ID: "key_m", Hash: "hash-m", Tenant: tenantA,
			Principal: "p", Role: dockettype.RoleMember, AllTenants: true})
		wantErrIs(t, "a member key for all tenants", err, store.ErrInvalid)
	})
}

func taskIDsOf(ts []*dockettype.Task) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}
