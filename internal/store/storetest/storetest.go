package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Run runs the conformance suite. newStore returns a fresh, empty, migrated
// store for one subtest (its own database file or schema); the suite closes
// it.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	su := suite{newStore: newStore}
	t.Run("Admit", su.testAdmit)
	t.Run("AdmitConcurrency", su.testAdmitConcurrency)
	t.Run("Claim", su.testClaim)
	t.Run("Schedule", su.testSchedule)
	t.Run("Retention", su.testRetention)
	t.Run("StorageQuota", su.testStorageQuota)
	t.Run("Fairness", su.testFairness)
	t.Run("Finish", su.testFinish)
	t.Run("Evidence", su.testEvidence)
	t.Run("Heartbeat", su.testHeartbeat)
	t.Run("Recovery", su.testRecovery)
	t.Run("Deadline", su.testDeadline)
	t.Run("Cancel", su.testCancel)
	t.Run("History", su.testHistory)
	t.Run("Read", su.testRead)
	t.Run("Admin", su.testAdmin)
	t.Run("RuleSets", su.testRuleSets)
	t.Run("Fork", su.testFork)
	t.Run("Remote", su.testRemote)
	t.Run("Schedules", su.testSchedules)
	t.Run("Dependencies", su.testDependencies)
	t.Run("Retry", su.testRetry)
	t.Run("Bulk", su.testBulk)
	t.Run("Flow", su.testFlow)
	t.Run("Throughput", su.testThroughput)
}

type suite struct {
	newStore func(t *testing.T) store.Store
}

// run runs fn as a parallel subtest with its own fresh store.
func (su suite) run(t *testing.T, name string, fn func(t *testing.T, s store.Store)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		fn(t, su.open(t))
	})
}

// open returns a fresh store that is closed when t ends.
func (su suite) open(t *testing.T) store.Store {
	t.Helper()
	s := su.newStore(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// fork returns a fork of s that is closed when t ends (before s).
func fork(t *testing.T, s store.Store, name string, maxConns int) store.Store {
	t.Helper()
	f, err := s.Fork(name, store.ForkOptions{MaxConns: maxConns})
	if err != nil {
		t.Fatalf("Fork(%q, %d): %v", name, maxConns, err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close fork %q: %v", name, err)
		}
	})
	return f
}

// Time is pinned: every call passes Now from base, advanced in whole
// milliseconds because backends keep millisecond precision.
var base = time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return base.Add(d) }

const (
	tenantA = "acme"
	tenantB = "globex"
	ttl     = 30 * time.Second
	ms      = time.Millisecond
)

// input is deliberately not in canonical JSON form (spacing, key order) so
// that a backend which re-encodes input is caught: input is immutable bytes.
var input = []byte(`{"text": "hello",  "b": [1, 2], "a": null}`)

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// newItem returns an admission item with a fresh task ID and key and
// unlimited pool capacity.
func newItem(tenant string) *store.AdmitItem {
	id := newID()
	return &store.AdmitItem{
		TaskID:         id,
		Tenant:         tenant,
		Author:         "alice@" + tenant,
		IdempotencyKey: "key-" + id,
		RequestHash:    "hash-" + id,
		Workflow:       "demo.echo",
		Pool:           dockettype.PoolOnline,
		MaxAttempts:    3,
		DeadlineAt:     at(time.Hour),
		TraceID:        "trace-" + id,
		ConfigVersion:  "seed-1",
		Input:          input,
	}
}

// retry returns a copy of it with a fresh task ID: what a client retry of
// the same request looks like to the store.
func retry(it *store.AdmitItem) *store.AdmitItem {
	c := *it
	c.TaskID = newID()
	return &c
}

func admit(t *testing.T, s store.Store, now time.Time, items ...*store.AdmitItem) []store.AdmitResult {
	t.Helper()
	res, err := s.Admit(t.Context(), &store.AdmitParams{Now: now, Items: items})
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if len(res) != len(items) {
		t.Fatalf("Admit returned %d results for %d items", len(res), len(items))
	}
	return res
}

func admitOne(t *testing.T, s store.Store, now time.Time, it *store.AdmitItem) *dockettype.Task {
	t.Helper()
	res := admit(t, s, now, it)[0]
	if res.Outcome != store.Admitted || res.Task == nil {
		t.Fatalf("Admit %s: outcome %v (task %v), want admitted", it.IdempotencyKey, res.Outcome, res.Task)
	}
	return res.Task
}

// admitN admits n items of tenant in one call; mutate (optional) adjusts
// each item first.
func admitN(t *testing.T, s store.Store, now time.Time, tenant string, n int, mutate func(*store.AdmitItem)) []*dockettype.Task {
	t.Helper()
	items := make([]*store.AdmitItem, n)
	for i := range items {
		items[i] = newItem(tenant)
		if mutate != nil {
			mutate(items[i])
		}
	}
	tasks := make([]*dockettype.Task, n)
	for i, r := range admit(t, s, now, items...) {
		if r.Outcome != store.Admitted {
			t.Fatalf("Admit item %d: outcome %v, want admitted", i, r.Outcome)
		}
		tasks[i] = r.Task
	}
	return tasks
}

func claim(t *testing.T, s store.Store, now time.Time, pool dockettype.Pool, limit int) []*store.ClaimedTask {
	t.Helper()
	got, err := s.Claim(t.Context(), &store.ClaimParams{Now: now, Queue: store.PoolQueue(pool), Owner: "node-1", Limit: limit, LeaseTTL: ttl})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if len(got) > limit {
		t.Fatalf("Claim(limit %d) returned %d tasks", limit, len(got))
	}
	return got
}

// claimOne claims exactly one online task and fails otherwise.
func claimOne(t *testing.T, s store.Store, now time.Time) *store.ClaimedTask {
	t.Helper()
	got := claim(t, s, now, dockettype.PoolOnline, 1)
	if len(got) != 1 {
		t.Fatalf("Claim at %v: got %d tasks, want 1", now.Sub(base), len(got))
	}
	return got[0]
}

// admitClaimed admits one online task and claims it at now with the default
// TTL. The store must hold no other ready online task.
func admitClaimed(t *testing.T, s store.Store, now time.Time, it *store.AdmitItem) *store.ClaimedTask {
	t.Helper()
	task := admitOne(t, s, now, it)
	c := claimOne(t, s, now)
	if c.Task.ID != task.ID {
		t.Fatalf("claimed %s, want the only queued task %s", c.Task.ID, task.ID)
	}
	return c
}

func finish(t *testing.T, s store.Store, now time.Time, items ...store.FinishItem) []store.FinishResult {
	t.Helper()
	res, err := s.Finish(t.Context(), &store.FinishParams{Now: now, Items: items})
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if len(res) != len(items) {
		t.Fatalf("Finish returned %d results for %d items", len(res), len(items))
	}
	return res
}

// finishOne applies one item and checks whether it applied.
func finishOne(t *testing.T, s store.Store, now time.Time, item store.FinishItem, wantApplied bool) store.FinishResult {
	t.Helper()
	res := finish(t, s, now, item)[0]
	if res.Applied != wantApplied {
		t.Fatalf("Finish %v epoch %d: Applied = %v, want %v (state %s)", item.Kind, item.Epoch, res.Applied, wantApplied, res.State)
	}
	return res
}

func succeed(l store.Lease) store.FinishItem {
	return store.FinishItem{Lease: l, Kind: store.FinishSucceed, Result: []byte(`{"ok":true}`)}
}

func fail(l store.Lease, code dockettype.Code) store.FinishItem {
	return store.FinishItem{Lease: l, Kind: store.FinishFail, Code: code}
}

func retryAt(l store.Lease, runAfter time.Time) store.FinishItem {
	return store.FinishItem{Lease: l, Kind: store.FinishRetry, Code: dockettype.CodeWorkflowError, RunAfter: runAfter}
}

func cancel(t *testing.T, s store.Store, now time.Time, tenant, id string) *store.CancelResult {
	t.Helper()
	res, err := s.Cancel(t.Context(), &store.CancelParams{Now: now, Tenant: tenant, TaskID: id})
	if err != nil {
		t.Fatalf("Cancel %s: %v", id, err)
	}
	return res
}

func heartbeat(t *testing.T, s store.Store, now time.Time, leases ...store.Lease) []store.RefusedLease {
	t.Helper()
	refused, err := s.Heartbeat(t.Context(), &store.HeartbeatParams{Now: now, LeaseTTL: ttl, Leases: leases})
	if err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	return refused
}

func findExpired(t *testing.T, s store.Store, now time.Time, limit int) []store.ExpiredLease {
	t.Helper()
	got, err := s.FindExpiredLeases(t.Context(), &store.FindExpiredLeasesParams{Now: now, Limit: limit})
	if err != nil {
		t.Fatalf("FindExpiredLeases: %v", err)
	}
	if len(got) > limit {
		t.Fatalf("FindExpiredLeases(limit %d) returned %d", limit, len(got))
	}
	return got
}

func recoverLeases(t *testing.T, s store.Store, now time.Time, items []store.ExpiredLease) store.RecoverResult {
	t.Helper()
	res, err := s.RecoverLeases(t.Context(), &store.RecoverLeasesParams{Now: now, Items: items})
	if err != nil {
		t.Fatalf("RecoverLeases: %v", err)
	}
	return res
}

func findOverdue(t *testing.T, s store.Store, now time.Time, limit int) []store.OverdueTask {
	t.Helper()
	got, err := s.FindOverdue(t.Context(), &store.FindOverdueParams{Now: now, Limit: limit})
	if err != nil {
		t.Fatalf("FindOverdue: %v", err)
	}
	if len(got) > limit {
		t.Fatalf("FindOverdue(limit %d) returned %d", limit, len(got))
	}
	return got
}

func expireTasks(t *testing.T, s store.Store, now time.Time, items []store.OverdueTask) []store.OverdueTask {
	t.Helper()
	got, err := s.ExpireTasks(t.Context(), &store.ExpireTasksParams{Now: now, Items: items})
	if err != nil {
		t.Fatalf("ExpireTasks: %v", err)
	}
	return got
}

func getTask(t *testing.T, s store.Store, tenant, id string) *dockettype.Task {
	t.Helper()
	task, err := s.GetTask(t.Context(), &store.GetTaskParams{Tenant: tenant, TaskID: id})
	if err != nil {
		t.Fatalf("GetTask %s: %v", id, err)
	}
	return task
}

func listEvents(t *testing.T, s store.Store, tenant, id string) []dockettype.Event {
	t.Helper()
	evs, err := s.ListEvents(t.Context(), &store.GetTaskParams{Tenant: tenant, TaskID: id})
	if err != nil {
		t.Fatalf("ListEvents %s: %v", id, err)
	}
	return evs
}

func listEvidence(t *testing.T, s store.Store, tenant, id string) []dockettype.Evidence {
	t.Helper()
	ev, err := s.ListEvidence(t.Context(), &store.GetTaskParams{Tenant: tenant, TaskID: id})
	if err != nil {
		t.Fatalf("ListEvidence %s: %v", id, err)
	}
	return ev
}

func listTasks(t *testing.T, s store.Store, p *store.ListTasksParams) []*dockettype.Task {
	t.Helper()
	tasks, err := s.ListTasks(t.Context(), p)
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	return tasks
}

func getTenant(t *testing.T, s store.Store, id string) *store.Tenant {
	t.Helper()
	ten, err := s.GetTenant(t.Context(), id)
	if err != nil {
		t.Fatalf("GetTenant %s: %v", id, err)
	}
	return ten
}

func setLimits(t *testing.T, s store.Store, tenant string, maxInFlight, weight int) {
	t.Helper()
	_, err := s.UpdateTenant(t.Context(), &store.UpdateTenantParams{Now: base, Tenant: tenant, MaxInFlight: &maxInFlight, Weight: &weight})
	if err != nil {
		t.Fatalf("UpdateTenant %s: %v", tenant, err)
	}
}

// stats reads Stats and indexes it by pool and tenant.
func stats(t *testing.T, s store.Store) (map[dockettype.Pool]store.PoolStats, map[string]*store.Tenant) {
	t.Helper()
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	pools := map[dockettype.Pool]store.PoolStats{}
	for _, p := range st.Pools {
		pools[p.Pool] = p
	}
	tenants := map[string]*store.Tenant{}
	for _, ten := range st.Tenants {
		tenants[ten.ID] = ten
	}
	return pools, tenants
}

// wantUsage checks the in-flight counts (the reservations held) of one
// pool and one tenant.
func wantUsage(t *testing.T, s store.Store, pool dockettype.Pool, wantPool int, tenant string, wantTenant int) {
	t.Helper()
	pools, tenants := stats(t, s)
	if got := pools[pool].InFlight; got != wantPool {
		t.Errorf("in flight in pool %s = %d, want %d", pool, got, wantPool)
	}
	got := 0
	if ten := tenants[tenant]; ten != nil {
		got = ten.InFlight
	}
	if got != wantTenant {
		t.Errorf("in flight of tenant %s = %d, want %d", tenant, got, wantTenant)
	}
}

// wantReleased checks that the task ended (so no longer holds its
// reservation) at when. That the counts went down by exactly one is
// checked by the callers' wantUsage.
func wantReleased(t *testing.T, s store.Store, id string, when time.Time) {
	t.Helper()
	task := getTask(t, s, tenantA, id)
	if !task.State.Terminal() {
		t.Errorf("task %s is %s, want terminal (reservation released)", id, task.State)
		return
	}
	wantTimePtr(t, "task FinishedAt", task.FinishedAt, when)
}

// wantHeld checks that the task is live (so holds its reservation).
func wantHeld(t *testing.T, s store.Store, id string) {
	t.Helper()
	if task := getTask(t, s, tenantA, id); task.State.Terminal() {
		t.Errorf("task %s is %s, want live (reservation held)", id, task.State)
	}
}

// wantBound checks how the store answers a second admission of it's key:
// a replay of task id when bound, an admission when the key is free. It
// admits a copy of it (with a fresh task ID) at now.
func wantBound(t *testing.T, s store.Store, now time.Time, it *store.AdmitItem, id string) {
	t.Helper()
	res := admit(t, s, now, retry(it))[0]
	if res.Outcome != store.Replayed || res.Task == nil || res.Task.ID != id {
		t.Fatalf("re-admitting key %s: outcome %v, want a replay of %s", it.IdempotencyKey, res.Outcome, id)
	}
}

// wantUnbound checks that the key of it is free: a retry is admitted.
func wantUnbound(t *testing.T, s store.Store, now time.Time, it *store.AdmitItem) *dockettype.Task {
	t.Helper()
	res := admit(t, s, now, retry(it))[0]
	if res.Outcome != store.Admitted {
		t.Fatalf("re-admitting key %s: outcome %v, want admitted (the key was not bound)", it.IdempotencyKey, res.Outcome)
	}
	return res.Task
}

// lastEvent checks the newest event of a task.
func lastEvent(t *testing.T, s store.Store, tenant, id string, from, to dockettype.State, epoch int64) dockettype.Event {
	t.Helper()
	evs := listEvents(t, s, tenant, id)
	if len(evs) == 0 {
		t.Fatalf("task %s has no events", id)
	}
	ev := evs[len(evs)-1]
	if ev.From != from || ev.To != to || ev.Epoch != epoch {
		t.Errorf("last event of %s = %s→%s epoch %d, want %s→%s epoch %d", id, ev.From, ev.To, ev.Epoch, from, to, epoch)
	}
	return ev
}

func wantState(t *testing.T, task *dockettype.Task, state dockettype.State, epoch int64) {
	t.Helper()
	if task.State != state || task.LeaseEpoch != epoch {
		t.Errorf("task %s: state %s epoch %d, want %s epoch %d", task.ID, task.State, task.LeaseEpoch, state, epoch)
	}
}

func wantCode(t *testing.T, task *dockettype.Task, code dockettype.Code) {
	t.Helper()
	if task.Error == nil {
		t.Errorf("task %s: Error nil, want code %s", task.ID, code)
		return
	}
	if task.Error.Code != code {
		t.Errorf("task %s: Error.Code %s, want %s", task.ID, task.Error.Code, code)
	}
}

func wantErrIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: err = %v, want %v", what, err, target)
	}
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Truncate(ms).Equal(want.Truncate(ms)) {
		t.Errorf("%s = %v, want %v", what, got.UTC(), want.UTC())
	}
}

func wantTimePtr(t *testing.T, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = nil, want %v", what, want.UTC())
		return
	}
	wantTime(t, what, *got, want)
}

// jsonEqual compares JSON documents by value: backends may store results and
// evidence as JSON documents that re-encode spacing and key order.
func jsonEqual(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

func taskIDs(tasks []*dockettype.Task) []string {
	ids := make([]string, len(tasks))
	for i, task := range tasks {
		ids[i] = task.ID
	}
	return ids
}

func claimedIDs(claimed []*store.ClaimedTask) []string {
	ids := make([]string, len(claimed))
	for i, c := range claimed {
		ids[i] = c.Task.ID
	}
	return ids
}

func sorted(ids []string) []string {
	c := slices.Clone(ids)
	slices.Sort(c)
	return c
}

// sameSet reports whether a and b hold the same IDs in any order.
func sameSet(a, b []string) bool { return slices.Equal(sorted(a), sorted(b)) }
