package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// newSpec is a schedule of tenantA firing demo.echo every minute.
func newSpec(name string) store.ScheduleSpec {
	return store.ScheduleSpec{
		Name: name, Tenant: tenantA, Workflow: "demo.echo", Input: input,
		Cron: "* * * * *", TimeZone: "America/New_York", Pool: dockettype.PoolOnline,
		TimeoutMS: 60_000, MaxAttempts: 2, Overlap: store.OverlapAllow, Missed: store.MissedSkip,
	}
}

// putSchedule writes a schedule and fails t unless the write applied.
func putSchedule(t *testing.T, s store.Store, p *store.PutScheduleParams) *store.Schedule {
	t.Helper()
	sc, ok, err := s.PutSchedule(t.Context(), p)
	if err != nil || !ok || sc == nil {
		t.Fatalf("PutSchedule %s (expect version %d): %v, %v, %v", p.Spec.Name, p.ExpectVersion, sc, ok, err)
	}
	return sc
}

func createSchedule(t *testing.T, s store.Store, name string, next time.Time) *store.Schedule {
	t.Helper()
	return putSchedule(t, s, &store.PutScheduleParams{Now: at(0), Spec: newSpec(name), NextFireAt: next})
}

func findDue(t *testing.T, s store.Store, now time.Time, limit int) []*store.Schedule {
	t.Helper()
	got, err := s.FindDueSchedules(t.Context(), &store.FindDueSchedulesParams{Now: now, Limit: limit})
	if err != nil {
		t.Fatalf("FindDueSchedules: %v", err)
	}
	if len(got) > limit {
		t.Fatalf("FindDueSchedules(limit %d) returned %d", limit, len(got))
	}
	return got
}

func advance(t *testing.T, s store.Store, p *store.AdvanceScheduleParams) bool {
	t.Helper()
	ok, err := s.AdvanceSchedule(t.Context(), p)
	if err != nil {
		t.Fatalf("AdvanceSchedule %s version %d: %v", p.Name, p.Version, err)
	}
	return ok
}

func getSchedule(t *testing.T, s store.Store, name string) *store.Schedule {
	t.Helper()
	sc, err := s.GetSchedule(t.Context(), name)
	if err != nil {
		t.Fatalf("GetSchedule %s: %v", name, err)
	}
	return sc
}

func scheduleRuns(t *testing.T, s store.Store, name string) []store.ScheduleRun {
	t.Helper()
	runs, err := s.ListScheduleRuns(t.Context(), &store.ListScheduleRunsParams{Name: name, Limit: 100})
	if err != nil {
		t.Fatalf("ListScheduleRuns %s: %v", name, err)
	}
	return runs
}

func scheduleNames(scs []*store.Schedule) []string {
	names := make([]string, len(scs))
	for i, sc := range scs {
		names[i] = sc.Name
	}
	return names
}

func (su suite) testSchedules(t *testing.T) {
	su.run(t, "PutGetListDelete", func(t *testing.T, s store.Store) {
		spec := newSpec("nightly.report")
		sc := putSchedule(t, s, &store.PutScheduleParams{Now: at(0), Spec: spec, NextFireAt: at(time.Minute)})
		if sc.Version != 1 || sc.Paused || sc.LastTaskID != "" || sc.LastFireAt != nil || sc.Fired != 0 {
			t.Errorf("created %+v, want version 1, not paused, no run yet", sc)
		}
		if !bytes.Equal(sc.Input, input) || sc.Cron != spec.Cron || sc.TimeZone != spec.TimeZone || sc.Pool != spec.Pool ||
			sc.TimeoutMS != spec.TimeoutMS || sc.MaxAttempts != spec.MaxAttempts || sc.Overlap != spec.Overlap || sc.Missed != spec.Missed {
			t.Errorf("created %+v, want the spec %+v (input byte for byte)", sc.ScheduleSpec, spec)
		}
		wantTime(t, "NextFireAt", sc.NextFireAt, at(time.Minute))
		wantTime(t, "CreatedAt", sc.CreatedAt, at(0))

		// Create-only refuses an existing name; a stale version changes
		// nothing.
		if _, ok, err := s.PutSchedule(t.Context(), &store.PutScheduleParams{Now: at(time.Second), Spec: spec, NextFireAt: at(time.Hour)}); ok || err != nil {
			t.Errorf("creating an existing schedule: ok %v, err %v; want refused", ok, err)
		}
		spec.Cron, spec.Input, spec.Overlap, spec.Missed, spec.CatchUpLimit, spec.Pool = "0 9 * * *", []byte(`{"v":2}`), store.OverlapSkip, store.MissedCatchUp, 5, ""
		re := putSchedule(t, s, &store.PutScheduleParams{Now: at(time.Second), Spec: spec, Paused: true, NextFireAt: at(time.Hour), ExpectVersion: 1})
		if re.Version != 2 || !re.Paused || re.Cron != "0 9 * * *" || string(re.Input) != `{"v":2}` || re.Pool != "" || re.CatchUpLimit != 5 {
			t.Errorf("replaced %+v, want version 2, paused, the new spec", re)
		}
		wantTime(t, "CreatedAt after replace", re.CreatedAt, at(0))
		wantTime(t, "UpdatedAt after replace", re.UpdatedAt, at(time.Second))
		if _, ok, err := s.PutSchedule(t.Context(), &store.PutScheduleParams{Now: at(2 * time.Second), Spec: spec, NextFireAt: at(time.Hour), ExpectVersion: 1}); ok || err != nil {
			t.Errorf("replacing a stale version: ok %v, err %v; want refused", ok, err)
		}
		if got := getSchedule(t, s, "nightly.report"); got.Version != 2 || !got.Paused {
			t.Errorf("read back %+v, want version 2, paused", got)
		}

		createSchedule(t, s, "a-first", at(time.Minute))
		list, err := s.ListSchedules(t.Context())
		if err != nil || len(list) != 2 || list[0].Name != "a-first" || list[1].Name != "nightly.report" {
			t.Fatalf("ListSchedules = %v, %v; want both, by name", scheduleNames(list), err)
		}

		if err := s.DeleteSchedule(t.Context(), "nightly.report"); err != nil {
			t.Fatalf("DeleteSchedule: %v", err)
		}
		_, err = s.GetSchedule(t.Context(), "nightly.report")
		wantErrIs(t, "GetSchedule after delete", err, store.ErrNotFound)
		wantErrIs(t, "DeleteSchedule again", s.DeleteSchedule(t.Context(), "nightly.report"), store.ErrNotFound)
		// The name can be used again, from version 1.
		if sc := createSchedule(t, s, "nightly.report", at(time.Minute)); sc.Version != 1 {
			t.Errorf("re-created schedule at version %d, want 1", sc.Version)
		}
	})

	su.run(t, "DueScan", func(t *testing.T, s store.Store) {
		createSchedule(t, s, "late", at(2*time.Second))
		createSchedule(t, s, "early", at(time.Second))
		createSchedule(t, s, "future", at(time.Hour))
		paused := newSpec("paused")
		putSchedule(t, s, &store.PutScheduleParams{Now: at(0), Spec: paused, Paused: true, NextFireAt: at(0)})

		if got := findDue(t, s, at(0), 10); len(got) != 0 {
			t.Errorf("due at 0: %v, want none (a paused schedule never is)", scheduleNames(got))
		}
		got := findDue(t, s, at(2*time.Second), 10)
		if names := scheduleNames(got); len(names) != 2 || names[0] != "early" || names[1] != "late" {
			t.Fatalf("due at 2s: %v, want early then late (at the fire time itself too)", names)
		}
		if got[0].LastTaskLive {
			t.Errorf("a schedule that never fired has a live last task")
		}
		if got := findDue(t, s, at(time.Hour), 1); len(got) != 1 || got[0].Name != "early" {
			t.Errorf("due with limit 1: %v, want the earliest", scheduleNames(got))
		}
	})

	su.run(t, "AdvanceRecordsTheRun", func(t *testing.T, s store.Store) {
		sc := createSchedule(t, s, "every.minute", at(time.Minute))
		task := admitOne(t, s, at(time.Minute), newItem(tenantA))
		run := &store.ScheduleRun{FireAt: at(time.Minute), TaskID: task.ID}
		adv := &store.AdvanceScheduleParams{Now: at(time.Minute), Name: sc.Name, Version: sc.Version,
			NextFireAt: at(2 * time.Minute), Run: run, Missed: 3}
		if !advance(t, s, adv) {
			t.Fatalf("AdvanceSchedule at the version read: refused")
		}
		if advance(t, s, adv) {
			t.Errorf("AdvanceSchedule again at the same version: applied, want refused (no double advance)")
		}
		got := getSchedule(t, s, sc.Name)
		if got.Version != sc.Version+1 || got.LastTaskID != task.ID || got.Fired != 1 || got.MissedFires != 3 || got.Skipped != 0 {
			t.Errorf("after the fire %+v, want version %d, last task %s, fired 1, missed 3", got, sc.Version+1, task.ID)
		}
		wantTime(t, "NextFireAt", got.NextFireAt, at(2*time.Minute))
		wantTimePtr(t, "LastFireAt", got.LastFireAt, at(time.Minute))
		if due := findDue(t, s, at(time.Minute+30*time.Second), 10); len(due) != 0 {
			t.Errorf("due before the next fire time: %v", scheduleNames(due))
		}
		due := findDue(t, s, at(2*time.Minute), 10)
		if len(due) != 1 || !due[0].LastTaskLive {
			t.Fatalf("due at the next fire time: %+v, want it with its last task live", due)
		}
		runs := scheduleRuns(t, s, sc.Name)
		if len(runs) != 1 || runs[0].TaskID != task.ID || runs[0].State != dockettype.StateQueued {
			t.Fatalf("runs = %+v, want the one task, queued", runs)
		}
		wantTime(t, "run FireAt", runs[0].FireAt, at(time.Minute))

		// A drop only (no run) moves the time and the counters, not the
		// last task; the last error is replaced.
		if !advance(t, s, &store.AdvanceScheduleParams{Now: at(3 * time.Minute), Name: sc.Name, Version: got.Version,
			NextFireAt: at(4 * time.Minute), Missed: 1, LastError: dockettype.CodeUnknownWorkflow}) {
			t.Fatalf("advance without a run: refused")
		}
		got = getSchedule(t, s, sc.Name)
		if got.LastTaskID != task.ID || got.Fired != 1 || got.MissedFires != 4 || got.LastError != dockettype.CodeUnknownWorkflow {
			t.Errorf("after a drop %+v, want the same last task, fired 1, missed 4, last error unknown_workflow", got)
		}
		if len(scheduleRuns(t, s, sc.Name)) != 1 {
			t.Errorf("a drop recorded a run")
		}
		// A change of the schedule makes a fire read before it stale.
		putSchedule(t, s, &store.PutScheduleParams{Now: at(3 * time.Minute), Spec: newSpec(sc.Name), NextFireAt: at(5 * time.Minute), ExpectVersion: got.Version})
		if advance(t, s, &store.AdvanceScheduleParams{Now: at(4 * time.Minute), Name: sc.Name, Version: got.Version, NextFireAt: at(5 * time.Minute)}) {
			t.Errorf("advance of a version an admin replaced: applied")
		}
		if advance(t, s, &store.AdvanceScheduleParams{Now: at(4 * time.Minute), Name: "missing", Version: 1, NextFireAt: at(5 * time.Minute)}) {
			t.Errorf("advance of a missing schedule: applied")
		}
	})

	su.run(t, "OverlapGuard", func(t *testing.T, s store.Store) {
		sc := createSchedule(t, s, "overlap", at(time.Minute))
		// With no last task, a guarded advance (an overlap skip) is refused.
		if advance(t, s, &store.AdvanceScheduleParams{Now: at(time.Minute), Name: sc.Name, Version: sc.Version,
			NextFireAt: at(2 * time.Minute), Skipped: 1, IfLastTaskLive: true}) {
			t.Errorf("overlap skip with no last task: applied")
		}
		c := admitClaimed(t, s, at(time.Minute), newItem(tenantA))
		advance(t, s, &store.AdvanceScheduleParams{Now: at(time.Minute), Name: sc.Name, Version: sc.Version,
			NextFireAt: at(2 * time.Minute), Run: &store.ScheduleRun{FireAt: at(time.Minute), TaskID: c.Task.ID}})
		v := sc.Version + 1
		if !advance(t, s, &store.AdvanceScheduleParams{Now: at(2 * time.Minute), Name: sc.Name, Version: v,
			NextFireAt: at(3 * time.Minute), Skipped: 1, IfLastTaskLive: true}) {
			t.Fatalf("overlap skip while the last task runs: refused")
		}
		v++
		finishOne(t, s, at(150*time.Second), succeed(c.Lease()), true)
		due := findDue(t, s, at(3*time.Minute), 10)
		if len(due) != 1 || due[0].LastTaskLive {
			t.Fatalf("due after the last task finished: %+v, want it with its last task not live", due)
		}
		if advance(t, s, &store.AdvanceScheduleParams{Now: at(3 * time.Minute), Name: sc.Name, Version: v,
			NextFireAt: at(4 * time.Minute), Skipped: 1, IfLastTaskLive: true}) {
			t.Errorf("overlap skip after the last task finished: applied, want refused (the fire must go ahead)")
		}
		if got := getSchedule(t, s, sc.Name); got.Skipped != 1 || got.Version != v {
			t.Errorf("after the refused skip %+v, want skipped 1, version %d", got, v)
		}
		if runs := scheduleRuns(t, s, sc.Name); len(runs) != 1 || runs[0].State != dockettype.StateSucceeded {
			t.Errorf("runs = %+v, want the task, succeeded", runs)
		}
	})

	su.run(t, "RunsAreBounded", func(t *testing.T, s store.Store) {
		sc := createSchedule(t, s, "often", at(0))
		v := sc.Version
		n := store.ScheduleRunsKept + 5
		for i := range n {
			fire := at(time.Duration(i) * time.Second)
			if !advance(t, s, &store.AdvanceScheduleParams{Now: fire, Name: sc.Name, Version: v, NextFireAt: fire.Add(time.Second),
				Run: &store.ScheduleRun{FireAt: fire, TaskID: fmt.Sprintf("task-%02d", i)}}) {
				t.Fatalf("advance %d refused", i)
			}
			v++
		}
		runs := scheduleRuns(t, s, sc.Name)
		if len(runs) != store.ScheduleRunsKept {
			t.Fatalf("%d runs kept, want %d", len(runs), store.ScheduleRunsKept)
		}
		for i, r := range runs {
			if want := fmt.Sprintf("task-%02d", n-1-i); r.TaskID != want || r.State != "" {
				t.Errorf("run %d = %+v, want %s, newest first, with no state (no such task)", i, r, want)
			}
		}
		if err := s.DeleteSchedule(t.Context(), sc.Name); err != nil {
			t.Fatal(err)
		}
		createSchedule(t, s, sc.Name, at(0))
		if runs := scheduleRuns(t, s, sc.Name); len(runs) != 0 {
			t.Errorf("a deleted schedule's runs came back with its name: %v", runs)
		}
	})

	su.run(t, "ConcurrentAdvanceAppliesOnce", func(t *testing.T, s store.Store) {
		sc := createSchedule(t, s, "race", at(0))
		const n = 8
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			applied int
		)
		for i := range n {
			f := fork(t, s, fmt.Sprintf("node-%d", i), 1)
			wg.Go(func() {
				ok, err := f.AdvanceSchedule(t.Context(), &store.AdvanceScheduleParams{Now: at(0), Name: sc.Name, Version: sc.Version,
					NextFireAt: at(time.Minute), Run: &store.ScheduleRun{FireAt: at(0), TaskID: fmt.Sprintf("task-%d", i)}})
				if err != nil {
					t.Errorf("AdvanceSchedule: %v", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if ok {
					applied++
				}
			})
		}
		wg.Wait()
		got := getSchedule(t, s, sc.Name)
		if applied != 1 || got.Version != sc.Version+1 || got.Fired != 1 || len(scheduleRuns(t, s, sc.Name)) != 1 {
			t.Errorf("%d of %d concurrent advances applied (version %d, fired %d), want exactly one", applied, n, got.Version, got.Fired)
		}
	})
}
