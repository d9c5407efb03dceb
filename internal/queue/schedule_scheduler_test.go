package queue

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

// withScheduleClock starts the harness's fake clock at start and ticks the
// schedule scheduler every interval.
func withScheduleClock(start time.Time, interval time.Duration) harnessOption {
	return func(h *harness, c *Config) {
		h.clock = clockwork.NewFakeClockAt(start)
		c.Clock = h.clock
		c.ScheduleInterval = interval
	}
}

// watchScheduleTicks turns on the schedule scheduler's tick signal; call
// before start.
func (h *harness) watchScheduleTicks() chan struct{} {
	h.svc.signals.schedules.ticked.init()
	return h.svc.signals.schedules.ticked.ch
}

// advanceTo moves the fake clock to t and waits for the schedule tick it
// fires.
func (h *harness) advanceTo(ticked chan struct{}, t time.Time) {
	h.t.Helper()
	h.clock.Advance(t.Sub(h.clock.Now()))
	await(h.t, "schedule tick", ticked)
}

func (h *harness) putSchedule(req *ScheduleRequest) *Schedule {
	h.t.Helper()
	sc, _, err := h.svc.PutSchedule(context.Background(), req)
	if err != nil {
		h.t.Fatalf("PutSchedule %s: %v", req.Name, err)
	}
	return sc
}

func (h *harness) getSchedule(name string) *Schedule {
	h.t.Helper()
	sc, err := h.svc.GetSchedule(context.Background(), name)
	if err != nil {
		h.t.Fatalf("GetSchedule %s: %v", name, err)
	}
	return sc
}

// scheduledTasks lists the tenant's tasks that schedule name made, by
// fire time (their run_at).
func scheduledTasks(t *testing.T, svc *Service, tenant, name string) map[time.Time][]*dockettype.Task {
	t.Helper()
	out := map[time.Time][]*dockettype.Task{}
	after := ""
	for {
		page, err := svc.List(context.Background(), principal(tenant, "reader"), &ListRequest{Limit: 500, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range page.Tasks {
			if task.Author != ScheduleAuthor(name) {
				continue
			}
			if task.RunAt == nil {
				t.Fatalf("scheduled task %s has no run_at", task.ID)
			}
			out[task.RunAt.UTC()] = append(out[task.RunAt.UTC()], task)
		}
		if page.Next == "" {
			return out
		}
		after = page.Next
	}
}

// wantFiredOnce checks that schedule name made exactly one task for each
// of want and none other.
func wantFiredOnce(t *testing.T, svc *Service, tenant, name string, want []time.Time) {
	t.Helper()
	got := scheduledTasks(t, svc, tenant, name)
	for _, w := range want {
		if n := len(got[w.UTC()]); n != 1 {
			t.Errorf("schedule %s made %d tasks for %s, want 1", name, n, w.UTC().Format(time.RFC3339))
		}
	}
	for ft := range got {
		if !slices.ContainsFunc(want, func(w time.Time) bool { return w.Equal(ft) }) {
			t.Errorf("schedule %s made a task for %s, which is not a wanted fire time", name, ft.Format(time.RFC3339))
		}
	}
}

func everySecond(name string) *ScheduleRequest {
	return &ScheduleRequest{Name: name, Tenant: "acme", Workflow: "test.echo", Input: json.RawMessage(`{"n": 1}`),
		Cron: "* * * * * *", Overlap: store.OverlapAllow, Missed: store.MissedSkip}
}

// A schedule fires one task per fire time through admission: the
// schedule's tenant, the author schedule:<name>, run_at the fire time, its
// input; its runs and counters follow, and a second fire of a time (a
// node that crashed before advancing) is a replay of the same task.
func TestScheduleFiresEachTimeOnce(t *testing.T) {
	h := newHarness(t, withScheduleClock(baseTime, time.Second))
	ticked := h.watchScheduleTicks()
	h.start()
	await(t, "schedule tick", ticked) // the first, at start

	sc := h.putSchedule(everySecond("pulse"))
	if len(sc.NextFireTimes) != NextFireTimesShown || !sc.NextFireTimes[0].Equal(baseTime.Add(time.Second)) {
		t.Fatalf("next fire times %v, want 5 from %s", sc.NextFireTimes, baseTime.Add(time.Second))
	}
	var want []time.Time
	for i := 1; i <= 5; i++ {
		fire := baseTime.Add(time.Duration(i) * time.Second)
		h.advanceTo(ticked, fire)
		want = append(want, fire)
	}
	wantFiredOnce(t, h.svc, "acme", "pulse", want)
	task := scheduledTasks(t, h.svc, "acme", "pulse")[want[0]][0]
	if task.Tenant != "acme" || task.Workflow != "test.echo" || !task.CreatedAt.Equal(want[0]) {
		t.Errorf("task %+v, want tenant acme, test.echo, admitted at its fire time", task)
	}
	if done := h.waitTerminal(alice, task.ID, dockettype.StateSucceeded); string(done.Result) != `{"n":1}` {
		t.Errorf("result %s, want the schedule's input", done.Result)
	}

	got := h.getSchedule("pulse")
	if got.Fired != 5 || got.MissedFires != 0 || got.LastTaskID == "" || len(got.Runs) != 5 {
		t.Errorf("schedule %+v, want 5 fired, none missed, 5 runs", got.Schedule)
	}
	if !got.Runs[0].FireAt.Equal(want[4]) || got.Runs[0].TaskID != got.LastTaskID {
		t.Errorf("latest run %+v, want %s and the last task", got.Runs[0], want[4])
	}
	if !got.NextFireTimes[0].Equal(baseTime.Add(6 * time.Second)) {
		t.Errorf("next fire time %s, want %s", got.NextFireTimes[0], baseTime.Add(6*time.Second))
	}
	// The fire of an already fired time is a replay.
	res, err := h.svc.Submit(context.Background(), dockettype.Principal{Tenant: "acme", Name: ScheduleAuthor("pulse")},
		&SubmitRequest{IdempotencyKey: ScheduleKey("pulse", want[0]), Workflow: "test.echo", Input: json.RawMessage(`{"n":1}`), RunAt: want[0]})
	if err != nil || !res.Replayed || res.Task.ID != task.ID {
		t.Errorf("re-fire of %s = %+v, %v; want a replay of %s", want[0], res, err, task.ID)
	}
	if n := testutil.ToFloat64(h.svc.metrics.ScheduleFires.WithLabelValues("admitted")); n != 5 {
		t.Errorf("admitted fires = %v, want 5", n)
	}
}

// The fire times of a schedule in a time zone through the autumn change
// in New York: a daily 01:30 fires once on the night that repeats 01:30,
// and at 01:30 EST the day after.
func TestScheduleFiresAcrossDST(t *testing.T) {
	start := utc("2026-10-30T16:00:00Z")
	h := newHarness(t, withScheduleClock(start, time.Second))
	ticked := h.watchScheduleTicks()
	h.start()
	await(t, "schedule tick", ticked)
	req := everySecond("nightly")
	req.Cron, req.TimeZone = "30 1 * * *", "America/New_York"
	sc := h.putSchedule(req)
	want := []time.Time{utc("2026-10-31T05:30:00Z"), utc("2026-11-01T05:30:00Z"), utc("2026-11-02T06:30:00Z")}
	if !slices.EqualFunc(sc.NextFireTimes[:3], want, time.Time.Equal) {
		t.Fatalf("next fire times %v, want %v", sc.NextFireTimes, want)
	}
	// Walk the clock through every instant that could fire, the repeated
	// 01:30 EST of 1 November included, one tick at each.
	for _, at := range []time.Time{want[0], want[1], utc("2026-11-01T06:30:00Z"), want[2]} {
		h.advanceTo(ticked, at)
		for _, tasks := range scheduledTasks(t, h.svc, "acme", "nightly") {
			h.waitTerminal(alice, tasks[0].ID, dockettype.StateSucceeded)
		}
	}
	wantFiredOnce(t, h.svc, "acme", "nightly", want)
}

// Overlap skip: while the schedule's previous task is running, its fire
// times are skipped (and counted); once it is terminal, the next fires.
func TestScheduleOverlapSkip(t *testing.T) {
	h := newHarness(t, withScheduleClock(baseTime, time.Second))
	hold := h.gate()
	h.rt.register("test.hold", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		select {
		case <-hold.C:
		case <-ctx.Done():
		}
		return nil, nil
	})
	ticked := h.watchScheduleTicks()
	h.start()
	await(t, "schedule tick", ticked)
	req := everySecond("exclusive")
	req.Workflow, req.Overlap = "test.hold", store.OverlapSkip
	h.putSchedule(req)

	first := baseTime.Add(time.Second)
	h.advanceTo(ticked, first)
	h.advanceTo(ticked, baseTime.Add(2*time.Second))
	h.advanceTo(ticked, baseTime.Add(3*time.Second))
	if got := h.getSchedule("exclusive"); got.Fired != 1 || got.Skipped != 2 {
		t.Fatalf("while the first task runs: fired %d, skipped %d; want 1, 2", got.Fired, got.Skipped)
	}
	hold.open()
	h.waitTerminal(alice, h.getSchedule("exclusive").LastTaskID, dockettype.StateSucceeded)
	fourth := baseTime.Add(4 * time.Second)
	h.advanceTo(ticked, fourth)
	wantFiredOnce(t, h.svc, "acme", "exclusive", []time.Time{first, fourth})
	if got := h.getSchedule("exclusive"); got.Fired != 2 || got.Skipped != 2 {
		t.Errorf("after the first task ended: fired %d, skipped %d; want 2, 2", got.Fired, got.Skipped)
	}
}

// After downtime (no node ran for ten minutes), missed "skip" drops the
// missed fire times and fires the on-time one; missed "catch_up" fires the
// latest catch_up_limit missed ones too, oldest first.
func TestScheduleMissedPolicies(t *testing.T) {
	h := newHarness(t, withScheduleClock(baseTime, time.Second))
	ticked := h.watchScheduleTicks()
	skip := everySecond("drop")
	skip.Cron = "* * * * *"
	h.putSchedule(skip)
	catchUp := everySecond("catch")
	catchUp.Cron, catchUp.Missed, catchUp.CatchUpLimit = "* * * * *", store.MissedCatchUp, 3
	h.putSchedule(catchUp)
	// Down until 09:10:05: 09:01 … 09:09 are more than the grace late,
	// 09:10 is on time.
	h.clock.Advance(10*time.Minute + 5*time.Second)
	h.start()
	await(t, "schedule tick", ticked) // the first tick, at start

	minute := func(m int) time.Time { return baseTime.Add(time.Duration(m) * time.Minute) }
	wantFiredOnce(t, h.svc, "acme", "drop", []time.Time{minute(10)})
	wantFiredOnce(t, h.svc, "acme", "catch", []time.Time{minute(7), minute(8), minute(9), minute(10)})
	if got := h.getSchedule("drop"); got.MissedFires != 9 || got.Fired != 1 || !got.NextFireTimes[0].Equal(minute(11)) {
		t.Errorf("skip: missed %d, fired %d, next %v; want 9, 1, 09:11", got.MissedFires, got.Fired, got.NextFireTimes)
	}
	if got := h.getSchedule("catch"); got.MissedFires != 6 || got.Fired != 4 {
		t.Errorf("catch_up: missed %d, fired %d; want 6, 4", got.MissedFires, got.Fired)
	}
	if n := testutil.ToFloat64(h.svc.metrics.ScheduleFires.WithLabelValues("missed")); n != 15 {
		t.Errorf("missed fires counted %v, want 15", n)
	}
}

// A fire refused for the tenant's limit (429) is tried again at the next
// ticks: once there is room, the same fire time makes its task, late but
// within the grace.
func TestScheduleFireDeferredByQuota(t *testing.T) {
	h := newHarness(t, withScheduleClock(baseTime, time.Second))
	hold := h.gate()
	h.rt.register("test.hold", dockettype.PoolOnline, func(ctx context.Context, inv *Invocation) (json.RawMessage, error) {
		select {
		case <-hold.C:
		case <-ctx.Done():
		}
		return nil, nil
	})
	limit := 1
	if _, err := h.store.UpdateTenant(context.Background(), &store.UpdateTenantParams{Now: baseTime, Tenant: "acme", MaxInFlight: &limit}); err != nil {
		t.Fatal(err)
	}
	ticked := h.watchScheduleTicks()
	h.start()
	await(t, "schedule tick", ticked)
	blocker := h.submit(alice, "blocker", "test.hold", `1`)
	h.putSchedule(everySecond("pulse"))

	first := baseTime.Add(time.Second)
	h.advanceTo(ticked, first)
	if got := h.getSchedule("pulse"); got.Fired != 0 || !got.NextFireAt.Equal(first) {
		t.Fatalf("over the tenant's limit: fired %d, next %s; want 0 and the fire time kept", got.Fired, got.NextFireAt)
	}
	if n := testutil.ToFloat64(h.svc.metrics.ScheduleFires.WithLabelValues("deferred")); n != 1 {
		t.Errorf("deferred fires = %v, want 1", n)
	}
	hold.open()
	h.waitTerminal(alice, blocker.ID, dockettype.StateSucceeded)
	// One at a time (the limit is 1): the deferred time first.
	h.advanceTo(ticked, baseTime.Add(2*time.Second))
	tasks := scheduledTasks(t, h.svc, "acme", "pulse")
	if len(tasks[first]) != 1 || !tasks[first][0].CreatedAt.Equal(baseTime.Add(2*time.Second)) {
		t.Fatalf("tasks %v, want the deferred fire time's task, admitted a second late", tasks)
	}
}

// A fire that admission refuses for good (its workflow is gone) is
// advanced past with the code as the schedule's last error.
func TestScheduleFireRefusedForGood(t *testing.T) {
	h := newHarness(t, withScheduleClock(baseTime, time.Second))
	h.rt.register("test.gone", dockettype.PoolOnline, func(context.Context, *Invocation) (json.RawMessage, error) { return nil, nil })
	ticked := h.watchScheduleTicks()
	h.start()
	await(t, "schedule tick", ticked)
	req := everySecond("orphan")
	req.Workflow = "test.gone"
	h.putSchedule(req)
	h.rt.mu.Lock()
	delete(h.rt.pools, "test.gone")
	h.rt.mu.Unlock()
	h.advanceTo(ticked, baseTime.Add(time.Second))
	got := h.getSchedule("orphan")
	if got.LastError != dockettype.CodeUnknownWorkflow || got.Fired != 0 || !got.NextFireAt.Equal(baseTime.Add(2*time.Second)) {
		t.Errorf("schedule %+v, want last error unknown_workflow, nothing fired, moved to the next time", got.Schedule)
	}
}

// Two Services (two nodes) on one SQLite database fire each time once:
// both tick at the same instants; one admits, the other replays or finds
// the schedule advanced.
func TestScheduleTwoNodesOnSQLite(t *testing.T) {
	h := newHarness(t, withScheduleClock(baseTime, time.Second))
	b := h.node(h.store, nil)
	tickedA, tickedB := h.watchScheduleTicks(), b.watchScheduleTicks()
	h.start()
	b.start()
	await(t, "schedule tick", tickedA)
	await(t, "schedule tick", tickedB)
	h.putSchedule(everySecond("shared"))
	var want []time.Time
	for i := 1; i <= 10; i++ {
		fire := baseTime.Add(time.Duration(i) * time.Second)
		h.clock.Advance(time.Second)
		await(t, "schedule tick", tickedA)
		await(t, "schedule tick", tickedB)
		want = append(want, fire)
	}
	wantFiredOnce(t, h.svc, "acme", "shared", want)
	admitted := testutil.ToFloat64(h.svc.metrics.ScheduleFires.WithLabelValues("admitted")) +
		testutil.ToFloat64(b.svc.metrics.ScheduleFires.WithLabelValues("admitted"))
	if admitted != 10 {
		t.Errorf("the nodes admitted %v fires together, want 10", admitted)
	}
	if got := h.getSchedule("shared"); got.Fired != 10 {
		t.Errorf("fired %d, want 10 (no double advance)", got.Fired)
	}
}

// Schedule admin: validation, a replace that keeps the next fire time,
// pause (no fire, no next times) and resume from after now, delete.
func TestScheduleAdmin(t *testing.T) {
	h := newHarness(t, withScheduleClock(baseTime, time.Second))
	ctx := context.Background()
	for _, tc := range []struct {
		mutate func(*ScheduleRequest)
		code   dockettype.Code
	}{
		{func(r *ScheduleRequest) { r.Name = "Bad Name" }, dockettype.CodeInvalidRequest},
		{func(r *ScheduleRequest) { r.Cron = "every day" }, dockettype.CodeInvalidRequest},
		{func(r *ScheduleRequest) { r.Cron = "0 0 30 2 *" }, dockettype.CodeInvalidRequest},
		{func(r *ScheduleRequest) { r.TimeZone = "Nowhere/City" }, dockettype.CodeInvalidRequest},
		{func(r *ScheduleRequest) { r.Workflow = "no.such" }, dockettype.CodeUnknownWorkflow},
		{func(r *ScheduleRequest) { r.Overlap = "" }, dockettype.CodeInvalidRequest},
		{func(r *ScheduleRequest) { r.CatchUpLimit = 2 }, dockettype.CodeInvalidRequest},
		{func(r *ScheduleRequest) { r.Missed, r.CatchUpLimit = store.MissedCatchUp, 101 }, dockettype.CodeInvalidRequest},
		{func(r *ScheduleRequest) { r.Input = json.RawMessage(`{`) }, dockettype.CodeInvalidRequest},
	} {
		req := everySecond("x")
		tc.mutate(req)
		_, _, err := h.svc.PutSchedule(ctx, req)
		if de, ok := err.(*dockettype.Error); !ok || de.Code != tc.code {
			t.Errorf("PutSchedule %+v: %v, want %s", req, err, tc.code)
		}
	}

	req := everySecond("daily")
	req.Cron = "0 9 * * *"
	sc, created, err := h.svc.PutSchedule(ctx, req)
	if err != nil || !created || sc.TimeZone != "UTC" || !sc.NextFireAt.Equal(baseTime.Add(24*time.Hour)) {
		t.Fatalf("PutSchedule = %+v, %v, %v; want created, UTC, next tomorrow 09:00", sc, created, err)
	}
	h.clock.Advance(24*time.Hour + time.Minute) // the fire is due (no scheduler runs)
	req.Input = json.RawMessage(`{"v":2}`)
	re, created, err := h.svc.PutSchedule(ctx, req)
	if err != nil || created || !re.NextFireAt.Equal(sc.NextFireAt) || string(re.Input) != `{"v":2}` {
		t.Errorf("re-put with the same cron = %+v, %v, %v; want replaced, the due time kept", re, created, err)
	}
	paused, err := h.svc.PauseSchedule(ctx, "daily")
	if err != nil || !paused.Paused || len(paused.NextFireTimes) != 0 {
		t.Errorf("pause = %+v, %v; want paused with no next fire times", paused, err)
	}
	resumed, err := h.svc.ResumeSchedule(ctx, "daily")
	if err != nil || resumed.Paused || !resumed.NextFireAt.Equal(baseTime.Add(48*time.Hour)) {
		t.Errorf("resume = %+v, %v; want running from the first time after now", resumed, err)
	}
	list, err := h.svc.ListSchedules(ctx)
	if err != nil || len(list) != 1 || len(list[0].NextFireTimes) != NextFireTimesShown {
		t.Errorf("list = %+v, %v", list, err)
	}
	if err := h.svc.DeleteSchedule(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"delete": h.svc.DeleteSchedule(ctx, "daily"),
		"get":    func() error { _, err := h.svc.GetSchedule(ctx, "daily"); return err }(),
		"pause":  func() error { _, err := h.svc.PauseSchedule(ctx, "daily"); return err }(),
	} {
		if de, ok := err.(*dockettype.Error); !ok || de.Code != dockettype.CodeNotFound {
			t.Errorf("%s of a deleted schedule: %v, want not_found", name, err)
		}
	}
}

// The store failing between a fire's two steps (admitted, not advanced:
// what a node killed at that moment leaves) and for the due scan: the
// fire time stays due, the next tick's fire of it is a replay of the same
// task, and the schedule moves on once.
func TestScheduleStoreFailures(t *testing.T) {
	var fs *faultstore.Store
	h := newHarness(t, withScheduleClock(baseTime, time.Second), withFaults(&fs))
	ticked := h.watchScheduleTicks()
	h.start()
	await(t, "schedule tick", ticked)
	h.putSchedule(everySecond("flaky"))

	first := baseTime.Add(time.Second)
	fs.Set("advance_schedule", faultstore.Fail(store.ErrUnavailable))
	h.advanceTo(ticked, first)
	if got := h.getSchedule("flaky"); got.Fired != 0 || !got.NextFireAt.Equal(first) {
		t.Fatalf("after a failed advance: fired %d, next %s; want the fire time still due", got.Fired, got.NextFireAt)
	}
	fs.Set("advance_schedule", nil)
	fs.Set("find_due_schedules", faultstore.Fail(store.ErrUnavailable))
	h.advanceTo(ticked, baseTime.Add(2*time.Second))
	fs.Set("find_due_schedules", nil)
	h.advanceTo(ticked, baseTime.Add(3*time.Second))
	wantFiredOnce(t, h.svc, "acme", "flaky", []time.Time{first, baseTime.Add(2 * time.Second), baseTime.Add(3 * time.Second)})
	if got := h.getSchedule("flaky"); got.Fired != 3 || got.MissedFires != 0 {
		t.Errorf("fired %d, missed %d; want 3, 0", got.Fired, got.MissedFires)
	}
	if n := testutil.ToFloat64(h.svc.metrics.ScheduleFires.WithLabelValues("replayed")); n != 1 {
		t.Errorf("replayed fires = %v, want 1 (the fire whose advance failed)", n)
	}
	if n := testutil.ToFloat64(h.svc.metrics.SchedulerErrors.WithLabelValues("schedules")); n != 2 {
		t.Errorf("failed schedule ticks = %v, want 2", n)
	}
}
