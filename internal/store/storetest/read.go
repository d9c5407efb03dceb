package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testRead(t *testing.T) {
	su.run(t, "TenantScoped", func(t *testing.T, s store.Store) {
		c := admitClaimed(t, s, at(0), newItem(tenantA))
		if err := appendEvidence(t, s, at(time.Second), c.Lease(), ruleEvidence...); err != nil {
			t.Fatalf("AppendEvidence: %v", err)
		}
		reads := []struct {
			name string
			read func(p *store.GetTaskParams) error
		}{
			{"GetTask", func(p *store.GetTaskParams) error { _, err := s.GetTask(t.Context(), p); return err }},
			{"ListEvents", func(p *store.GetTaskParams) error { _, err := s.ListEvents(t.Context(), p); return err }},
			{"ListEvidence", func(p *store.GetTaskParams) error { _, err := s.ListEvidence(t.Context(), p); return err }},
			{"GetInput", func(p *store.GetTaskParams) error { _, err := s.GetInput(t.Context(), p); return err }},
		}
		for _, r := range reads {
			t.Run(r.name, func(t *testing.T) {
				if err := r.read(&store.GetTaskParams{Tenant: tenantA, TaskID: c.Task.ID}); err != nil {
					t.Fatalf("own tenant: %v", err)
				}
				wantErrIs(t, "another tenant's task", r.read(&store.GetTaskParams{Tenant: tenantB, TaskID: c.Task.ID}), store.ErrNotFound)
				wantErrIs(t, "unknown task", r.read(&store.GetTaskParams{Tenant: tenantA, TaskID: newID()}), store.ErrNotFound)
			})
		}
	})

	su.run(t, "ListTasksNewestFirst", func(t *testing.T, s store.Store) {
		var own []string
		for i := range 7 {
			own = append(own, admitOne(t, s, at(time.Duration(i)*ms), newItem(tenantA)).ID)
			admitOne(t, s, at(time.Duration(i)*ms), newItem(tenantB))
		}
		slices.Reverse(own)

		all := listTasks(t, s, &store.ListTasksParams{Tenant: tenantA, Limit: 100})
		if got := taskIDs(all); !slices.Equal(got, own) {
			t.Fatalf("ListTasks = %v,\nwant the tenant's own tasks newest first %v", got, own)
		}

		var paged []string
		var sizes []int
		after := ""
		for range 4 {
			page := listTasks(t, s, &store.ListTasksParams{Tenant: tenantA, Limit: 3, After: after})
			sizes = append(sizes, len(page))
			if len(page) == 0 {
				break
			}
			paged = append(paged, taskIDs(page)...)
			after = page[len(page)-1].ID
		}
		if !slices.Equal(sizes, []int{3, 3, 1, 0}) {
			t.Errorf("page sizes with limit 3 = %v, want [3 3 1 0]", sizes)
		}
		if !slices.Equal(paged, own) {
			t.Errorf("pages joined = %v,\nwant %v (no overlap, no gap)", paged, own)
		}
	})

	su.run(t, "ListTasksFilters", func(t *testing.T, s store.Store) {
		online := admitN(t, s, at(0), tenantA, 3, nil)
		offline := admitN(t, s, at(ms), tenantA, 2, func(it *store.AdmitItem) { it.Pool = dockettype.PoolOffline })
		admitN(t, s, at(ms), tenantB, 2, nil)
		running := claim(t, s, at(time.Second), dockettype.PoolOffline, 1)
		if len(running) != 1 {
			t.Fatalf("claimed %d offline tasks, want 1", len(running))
		}
		var offlineQueued string
		for _, task := range offline {
			if task.ID != running[0].Task.ID {
				offlineQueued = task.ID
			}
		}
		for _, tc := range []struct {
			name  string
			state dockettype.State
			pool  dockettype.Pool
			want  []string
		}{
			{"state running", dockettype.StateRunning, "", []string{running[0].Task.ID}},
			{"state queued", dockettype.StateQueued, "", append(taskIDs(online), offlineQueued)},
			{"pool offline", "", dockettype.PoolOffline, taskIDs(offline)},
			{"pool online", "", dockettype.PoolOnline, taskIDs(online)},
			{"queued offline", dockettype.StateQueued, dockettype.PoolOffline, []string{offlineQueued}},
			{"succeeded", dockettype.StateSucceeded, "", nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := taskIDs(listTasks(t, s, &store.ListTasksParams{Tenant: tenantA, State: tc.state, Pool: tc.pool, Limit: 100}))
				want := sorted(tc.want)
				slices.Reverse(want)
				if !slices.Equal(got, want) {
					t.Errorf("ListTasks(state %q, pool %q) = %v, want %v", tc.state, tc.pool, got, want)
				}
			})
		}
	})

	su.run(t, "GetTasks", func(t *testing.T, s store.Store) {
		a := admitOne(t, s, at(0), newItem(tenantA))
		b := admitOne(t, s, at(0), newItem(tenantB))
		admitOne(t, s, at(0), newItem(tenantA))
		got, err := s.GetTasks(t.Context(), []string{a.ID, newID(), b.ID})
		if err != nil {
			t.Fatalf("GetTasks: %v", err)
		}
		if want := []string{a.ID, b.ID}; !sameSet(taskIDs(got), want) {
			t.Errorf("GetTasks = %v, want the existing %v", taskIDs(got), want)
		}
		for _, task := range got {
			if task.State != dockettype.StateQueued || (task.ID == b.ID && task.Tenant != tenantB) {
				t.Errorf("GetTasks task %s: state %s tenant %s, want queued of its own tenant", task.ID, task.State, task.Tenant)
			}
		}
	})

	su.run(t, "CountByState", func(t *testing.T, s store.Store) {
		admitN(t, s, at(0), tenantA, 3, nil)
		admitN(t, s, at(0), tenantB, 2, func(it *store.AdmitItem) { it.Pool = dockettype.PoolOffline })
		claimOne(t, s, at(time.Second))
		off := claim(t, s, at(time.Second), dockettype.PoolOffline, 1)
		if len(off) != 1 {
			t.Fatalf("claimed %d offline tasks, want 1", len(off))
		}
		finishOne(t, s, at(2*time.Second), succeed(off[0].Lease()), true)

		counts, err := s.CountByState(t.Context())
		if err != nil {
			t.Fatalf("CountByState: %v", err)
		}
		type key struct {
			pool  dockettype.Pool
			state dockettype.State
		}
		got := map[key]int64{}
		for _, c := range counts {
			if c.Count != 0 {
				got[key{c.Pool, c.State}] += c.Count
			}
		}
		want := map[key]int64{
			{dockettype.PoolOnline, dockettype.StateQueued}:     2,
			{dockettype.PoolOnline, dockettype.StateRunning}:    1,
			{dockettype.PoolOffline, dockettype.StateQueued}:    1,
			{dockettype.PoolOffline, dockettype.StateSucceeded}: 1,
		}
		if len(got) != len(want) {
			t.Errorf("CountByState = %v, want %v", got, want)
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("count of %s/%s = %d, want %d", k.pool, k.state, got[k], w)
			}
		}
	})
}
