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

	su.run(t, "ListTasksByWorkflow", func(t *testing.T, s store.Store) {
		// Two workflows of tenant A admitted in turns, then tenant B's tasks
		// of the same name: a workflow filter lists A's of that name only,
		// newest first, with the state and pool filters and the cursor.
		sleep := func(it *store.AdmitItem) { it.Workflow = "demo.sleep"; it.Pool = dockettype.PoolOffline }
		var echo, slept []string
		for i := range 3 {
			now := at(time.Duration(i) * ms)
			echo = append(echo, admitOne(t, s, now, newItem(tenantA)).ID)
			if i < 2 {
				slept = append(slept, admitN(t, s, now, tenantA, 1, sleep)[0].ID)
			}
		}
		running := claim(t, s, at(time.Second), dockettype.PoolOnline, 1)
		done := claim(t, s, at(time.Second), dockettype.PoolOffline, 1)
		if len(running) != 1 || len(done) != 1 {
			t.Fatalf("claimed %d online and %d offline tasks, want 1 and 1", len(running), len(done))
		}
		finishOne(t, s, at(2*time.Second), succeed(done[0].Lease()), true)
		admitN(t, s, at(3*time.Second), tenantB, 2, sleep)
		echoQueued := slices.DeleteFunc(slices.Clone(echo), func(id string) bool { return id == running[0].Task.ID })
		sleepQueued := slices.DeleteFunc(slices.Clone(slept), func(id string) bool { return id == done[0].Task.ID })
		for _, tc := range []struct {
			name     string
			workflow string
			state    dockettype.State
			pool     dockettype.Pool
			want     []string
		}{
			{"echo", "demo.echo", "", "", echo},
			{"sleep", "demo.sleep", "", "", slept},
			{"sleep succeeded", "demo.sleep", dockettype.StateSucceeded, "", []string{done[0].Task.ID}},
			{"sleep queued", "demo.sleep", dockettype.StateQueued, "", sleepQueued},
			{"echo running", "demo.echo", dockettype.StateRunning, "", []string{running[0].Task.ID}},
			{"echo queued online", "demo.echo", dockettype.StateQueued, dockettype.PoolOnline, echoQueued},
			{"echo offline", "demo.echo", "", dockettype.PoolOffline, nil},
			{"unknown workflow", "demo.nothing", "", "", nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := taskIDs(listTasks(t, s, &store.ListTasksParams{Tenant: tenantA, Workflow: tc.workflow, State: tc.state, Pool: tc.pool, Limit: 100}))
				want := sorted(tc.want)
				slices.Reverse(want)
				if !slices.Equal(got, want) {
					t.Errorf("ListTasks(workflow %q, state %q, pool %q) = %v, want %v", tc.workflow, tc.state, tc.pool, got, want)
				}
			})
		}

		want := sorted(echo)
		slices.Reverse(want)
		var paged []string
		after := ""
		for range 3 {
			page := listTasks(t, s, &store.ListTasksParams{Tenant: tenantA, Workflow: "demo.echo", Limit: 2, After: after})
			if len(page) == 0 {
				break
			}
			paged = append(paged, taskIDs(page)...)
			after = page[len(page)-1].ID
		}
		if !slices.Equal(paged, want) {
			t.Errorf("pages of demo.echo joined = %v,\nwant %v (no overlap, no gap, no other workflow)", paged, want)
		}
	})

	su.run(t, "Stats", func(t *testing.T, s store.Store) {
		admitN(t, s, at(0), tenantA, 3, nil)
		admitN(t, s, at(0), tenantB, 2, func(it *store.AdmitItem) { it.Pool = dockettype.PoolOffline })
		claimOne(t, s, at(time.Second))
		off := claim(t, s, at(time.Second), dockettype.PoolOffline, 1)
		if len(off) != 1 {
			t.Fatalf("claimed %d offline tasks, want 1", len(off))
		}
		finishOne(t, s, at(2*time.Second), succeed(off[0].Lease()), true)
		setLimits(t, s, tenantB, 7, 3)

		pools, tenants := stats(t, s)
		want := map[dockettype.Pool]store.PoolStats{
			dockettype.PoolOnline:  {Pool: dockettype.PoolOnline, InFlight: 3, Queued: 2, Running: 1},
			dockettype.PoolOffline: {Pool: dockettype.PoolOffline, InFlight: 1, Queued: 1, Running: 0},
		}
		for pool, w := range want {
			got := pools[pool]
			if got.InFlight != w.InFlight || got.Queued != w.Queued || got.Running != w.Running {
				t.Errorf("stats of %s = in flight %d, queued %d, running %d; want %d, %d, %d",
					pool, got.InFlight, got.Queued, got.Running, w.InFlight, w.Queued, w.Running)
			}
			if w.Queued > 0 {
				wantTimePtr(t, "oldest queued of "+string(pool), got.OldestQueuedAt, at(0))
			}
		}
		if a, b := tenants[tenantA], tenants[tenantB]; a == nil || b == nil ||
			a.InFlight != 3 || b.InFlight != 1 || b.MaxInFlight != 7 || b.Weight != 3 {
			t.Errorf("tenant stats = %+v, %+v; want A with 3 in flight, B with 1, limit 7, weight 3", a, b)
		}
	})
}
