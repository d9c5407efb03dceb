package httpapi_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

var (
	isolationSeed  = flag.Uint64("isolation.seed", 0, "run the tenant-isolation sweep with this seed only (0: the default seeds)")
	isolationCalls = flag.Int("isolation.calls", 250, "calls per seed of the tenant-isolation sweep")
)

// TestTenantIsolationSweep: three tenants, each with two member keys and an
// admin key, create tasks in every state (single and batch submissions,
// with idempotency keys they share and keys of their own). Then, per seed,
// random calls by one tenant's keys name another tenant's task IDs (as
// sent and altered), cursors, idempotency keys with their bodies, and
// admin routes: every read, wait, cancel, events and evidence call is 404;
// every list holds only the caller's tasks; every submission answers with
// the caller's own task (new, replayed or in conflict with its own key),
// and forged fields are refused; admin routes with a member key are 403. No
// answer carries another tenant's name or task IDs, and each tenant's
// tasks, states, events and evidence, read through the API as the owner,
// are the same after the calls as before (but for the tasks a tenant's own
// calls created). Deterministic per seed (-isolation.seed reruns one); on
// PostgreSQL too when DOCKET_TEST_POSTGRES_URL is set.
func TestTenantIsolationSweep(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if *isolationSeed != 0 {
		seeds = []uint64{*isolationSeed}
	}
	if testing.Short() {
		seeds = seeds[:1]
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		runIsolationSweep(t, nil, seeds)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := os.Getenv(pgtest.URLEnv)
		if url == "" {
			t.Skipf("%s is not set", pgtest.URLEnv)
		}
		runIsolationSweep(t, pgtest.Open(t, url, pgtest.Schema(t, url)), seeds)
	})
}

// sweepTenant is one tenant of the sweep.
type sweepTenant struct {
	name    string
	members []string // member keys of two principals
	admin   string   // an admin key of the tenant
	subs    []submission
	ids     map[string]bool // its tasks, as its owner lists them
	cursors []string        // next cursors of its pages
	created map[string]bool // tasks its own sweep calls created
}

// submission is a task as a client sends it.
type submission struct {
	key, body string
}

// keys returns every key of the tenant.
func (tn *sweepTenant) keys() []string { return append(slices.Clone(tn.members), tn.admin) }

// sharedSubmissions are sent by every tenant with the same keys and bodies.
var sharedSubmissions = []submission{
	{"echo-1", `{"workflow":"demo.echo","input":{"note":"` + canary + `","n":1}}`},
	{"echo-2", `{"workflow":"demo.echo","input":{"note":"` + canary + `","n":2}}`},
	{"fail-1", `{"workflow":"demo.fail","input":{"code":"workflow_error"},"max_attempts":1}`},
	{"sleep-1", `{"workflow":"demo.sleep","input":{"ms":3600000}}`},
	{"queued-1", `{"workflow":"demo.echo","pool":"offline","input":{"note":"` + canary + `","n":5}}`},
	{"cancel-1", `{"workflow":"demo.echo","pool":"offline","input":{"note":"` + canary + `","n":6}}`},
}

// batchSubmissions are sent in one batch by every tenant.
var batchSubmissions = []submission{
	{"batch-1", `{"workflow":"demo.echo","pool":"offline","input":{"n":7}}`},
	{"batch-2", `{"workflow":"demo.echo","pool":"offline","priority":5,"input":{"n":8}}`},
	{"batch-3", `{"workflow":"demo.fail","pool":"offline","input":{"code":"invalid_input"}}`},
}

// evidenceRuntime writes one evidence item for each task it runs and
// reports the task as started.
type evidenceRuntime struct {
	queue.Runtime
	started chan string
}

func (r *evidenceRuntime) Run(ctx context.Context, inv *queue.Invocation) (json.RawMessage, error) {
	body := fmt.Sprintf(`{"tenant":%q,"note":%q}`, inv.Task.Tenant, canary)
	if err := inv.Evidence.WriteEvidence(ctx, []dockettype.EvidenceItem{{Kind: "note", Body: json.RawMessage(body)}}); err != nil {
		return nil, err
	}
	select {
	case r.started <- inv.Task.ID:
	default: // only the fixture's tasks are waited for
	}
	return r.Runtime.Run(ctx, inv)
}

func runIsolationSweep(t *testing.T, st store.Store, seeds []uint64) {
	rt := &evidenceRuntime{started: make(chan string, 1024)}
	s := httpapitest.New(t, httpapitest.Options{
		Store: st,
		Queue: queue.Config{Online: queue.PoolConfig{Workers: 8}, Offline: queue.PoolConfig{Workers: -1}},
		WrapRuntime: func(r queue.Runtime) queue.Runtime {
			rt.Runtime = r
			return rt
		},
	})
	tenants := setupSweepTenants(t, s, rt.started)
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			before := map[string]map[string]string{}
			for _, tn := range tenants {
				before[tn.name] = snapshotTenant(t, s.URL, tn)
			}
			limits := tenantLimits(t, s, tenants)
			sw := &sweep{t: t, url: s.URL, tenants: tenants, rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
			for range *isolationCalls {
				sw.step()
			}
			for _, tn := range tenants {
				after := snapshotTenant(t, s.URL, tn)
				for id, view := range before[tn.name] {
					if after[id] != view {
						t.Errorf("%s's task %s changed:\nbefore %s\nafter  %s", tn.name, id, view, after[id])
					}
				}
				for id := range after {
					if _, ok := before[tn.name][id]; !ok && !tn.created[id] {
						t.Errorf("%s has a task %s that none of its calls created", tn.name, id)
					}
				}
			}
			if got := tenantLimits(t, s, tenants); !slices.Equal(got, limits) {
				t.Errorf("tenant limits changed: %v, were %v", got, limits)
			}
			t.Logf("seed %d: %d calls; %v", seed, *isolationCalls, sw.counts)
		})
	}
}

// setupSweepTenants creates the tenants, their keys and their tasks, and
// waits until each task is in the state it keeps during the sweep:
// succeeded, failed, running (held by demo.sleep), queued or cancelled.
func setupSweepTenants(t *testing.T, s *httpapitest.Stack, started <-chan string) []*sweepTenant {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var tenants []*sweepTenant
	sleeping := map[string]bool{}
	ending := map[string]string{} // the online tasks that end on their own, and a key of their tenant
	for _, name := range []string{"tenant-red", "tenant-green", "tenant-blue"} {
		tn := &sweepTenant{name: name, ids: map[string]bool{}, created: map[string]bool{}}
		for _, principal := range []string{"ann", "bob"} {
			key, err := s.NewKey(ctx, name, principal)
			if err != nil {
				t.Fatal(err)
			}
			tn.members = append(tn.members, key)
		}
		var err error
		if tn.admin, err = s.NewAdminKey(ctx, name, "root"); err != nil {
			t.Fatal(err)
		}
		own := submission{name + "-only", `{"workflow":"demo.echo","pool":"offline","input":{"owner":"` + name + `"}}`}
		tn.subs = append(slices.Clone(sharedSubmissions), own)
		for _, sub := range tn.subs {
			task := mustSubmit(t, s.URL, tn.members[0], sub.key, sub.body)
			tn.ids[task.ID] = true
			switch sub.key {
			case "cancel-1":
				call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks/" + task.ID + "/cancel", key: tn.members[1]}).wantStatus(t, http.StatusOK)
			case "sleep-1":
				sleeping[task.ID] = true
			case "echo-1", "echo-2", "fail-1":
				ending[task.ID] = tn.members[0]
			}
		}
		items := make([]string, len(batchSubmissions))
		for i, sub := range batchSubmissions {
			items[i] = batchItem(sub)
		}
		var ans batchAnswer
		postBatch(t, s.URL, tn.members[1], `{"tasks":[`+strings.Join(items, ",")+`]}`).decode(t, &ans)
		for _, res := range ans.Results {
			if res.Status != http.StatusCreated {
				t.Fatalf("batch item: %+v", res)
			}
			tn.ids[res.Task.ID] = true
		}
		tn.subs = append(tn.subs, batchSubmissions...)
		tenants = append(tenants, tn)
	}
	for len(sleeping) > 0 {
		select {
		case id := <-started:
			delete(sleeping, id)
		case <-ctx.Done():
			t.Fatalf("demo.sleep tasks %v did not start", sleeping)
		}
	}
	// The online tasks end on their own: wait for each (a long poll
	// answers when the task is terminal).
	for id, key := range ending {
		for !call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + id + "?wait=30s", key: key}).task(t).State.Terminal() {
			if ctx.Err() != nil {
				t.Fatalf("task %s did not end", id)
			}
		}
	}
	return tenants
}

// batchItem is a submission as a batch task.
func batchItem(sub submission) string {
	return `{"idempotency_key":"` + sub.key + `",` + strings.TrimPrefix(sub.body, "{")
}

// snapshotTenant reads every task of a tenant as its owner: the pages of
// GET /v1/tasks (three tasks a page, so there are cursors), and for each
// task its view, events and evidence. It records the tenant's task IDs
// and cursors for the sweep.
func snapshotTenant(t *testing.T, baseURL string, tn *sweepTenant) map[string]string {
	t.Helper()
	views := map[string]string{}
	tn.cursors = tn.cursors[:0]
	after := ""
	for {
		r := call(t, baseURL, request{method: http.MethodGet, path: "/v1/tasks?limit=3&after=" + after, key: tn.members[0]})
		var page struct {
			Tasks []*dockettype.Task `json:"tasks"`
			Next  string             `json:"next"`
		}
		r.decode(t, &page)
		for _, task := range page.Tasks {
			if task.Tenant != tn.name {
				t.Fatalf("%s's list holds %+v", tn.name, task)
			}
			tn.ids[task.ID] = true
			var b strings.Builder
			for _, sub := range []string{"", "/events", "/evidence"} {
				v := call(t, baseURL, request{method: http.MethodGet, path: "/v1/tasks/" + task.ID + sub, key: tn.members[1]})
				v.wantStatus(t, http.StatusOK)
				b.Write(v.body)
			}
			views[task.ID] = b.String()
		}
		if page.Next == "" {
			break
		}
		tn.cursors = append(tn.cursors, page.Next)
		after = page.Next
	}
	return views
}

// tenantLimits returns each tenant's limit and weight, as the store has
// them.
func tenantLimits(t *testing.T, s *httpapitest.Stack, tenants []*sweepTenant) []string {
	t.Helper()
	var out []string
	for _, tn := range tenants {
		got, err := s.Store.GetTenant(t.Context(), tn.name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s:%d:%d", got.ID, got.MaxInFlight, got.Weight))
	}
	return out
}

// sweep makes random cross-tenant calls.
type sweep struct {
	t       *testing.T
	url     string
	tenants []*sweepTenant
	rng     *rand.Rand
	counts  map[string]int
}

func pick[T any](rng *rand.Rand, s []T) T { return s[rng.IntN(len(s))] }

// step makes one call: a random attacker's random key names something of
// a random victim.
func (sw *sweep) step() {
	t := sw.t
	t.Helper()
	if sw.counts == nil {
		sw.counts = map[string]int{}
	}
	ai := sw.rng.IntN(len(sw.tenants))
	vi := (ai + 1 + sw.rng.IntN(len(sw.tenants)-1)) % len(sw.tenants)
	attacker, victim := sw.tenants[ai], sw.tenants[vi]
	key := pick(sw.rng, attacker.keys())
	vid := pick(sw.rng, slices.Sorted(maps.Keys(victim.ids)))
	id := sw.alter(vid)

	route := pick(sw.rng, []string{"get", "wait", "cancel", "events", "evidence", "list", "submit", "batch", "forged", "admin", "tenant-param", "own"})
	sw.counts[route]++
	var r response
	switch route {
	case "get", "cancel", "events", "evidence", "wait":
		method, path := http.MethodGet, "/v1/tasks/"+url.PathEscape(id)
		switch route {
		case "cancel":
			method, path = http.MethodPost, path+"/cancel"
		case "events", "evidence":
			path += "/" + route
		case "wait":
			path += "?wait=" + pick(sw.rng, []string{"1ms", "50ms", "1s", "30s"})
		}
		r = call(t, sw.url, request{method: method, path: path, key: key, header: map[string]string{"X-Tenant": victim.name}})
		r.wantError(t, http.StatusNotFound, dockettype.CodeNotFound)
	case "list":
		r = sw.list(attacker, victim, key)
	case "submit":
		sub := pick(sw.rng, victim.subs)
		r = submit(t, sw.url, key, sub.key, sub.body)
		sw.ownTask(attacker, r.status, r.task(t))
	case "batch":
		var items []string
		for range 1 + sw.rng.IntN(4) {
			items = append(items, batchItem(pick(sw.rng, victim.subs)))
		}
		r = postBatch(t, sw.url, key, `{"tasks":[`+strings.Join(items, ",")+`]}`)
		var ans batchAnswer
		r.decode(t, &ans)
		for _, res := range ans.Results {
			if res.Error != nil && res.Error.Code == dockettype.CodeIdempotencyConflict {
				continue // the attacker's own key, bound to another body
			}
			sw.ownTask(attacker, res.Status, res.Task)
		}
	case "forged":
		sub := pick(sw.rng, victim.subs)
		forged := pick(sw.rng, []string{`"tenant":"` + victim.name + `",`, `"id":"` + vid + `",`, `"author":"ann",`, `"task_id":"` + vid + `",`})
		r = postBatch(t, sw.url, key, `{"tasks":[`+strings.Replace(batchItem(sub), "{", "{"+forged, 1)+`]}`)
		var ans batchAnswer
		r.decode(t, &ans)
		if len(ans.Results) != 1 || ans.Results[0].Error == nil || ans.Results[0].Error.Code != dockettype.CodeInvalidRequest {
			t.Fatalf("forged %s: %s", forged, r.body)
		}
		submit(t, sw.url, key, sub.key, strings.Replace(sub.body, "{", "{"+forged, 1)).
			wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	case "admin":
		path := "/v1/admin/tenants/" + url.PathEscape(victim.name) + pick(sw.rng, []string{"", "/keys", "/tasks/" + vid})
		method := pick(sw.rng, []string{http.MethodPatch, http.MethodGet, http.MethodDelete, http.MethodPost})
		r = call(t, sw.url, request{method: method, path: path, key: pick(sw.rng, attacker.members), body: `{"max_in_flight":1,"weight":9}`})
		r.wantError(t, http.StatusForbidden, dockettype.CodeForbidden)
	case "tenant-param":
		path := pick(sw.rng, []string{"/v1/tasks?tenant=", "/v1/tasks/" + vid + "?tenant="}) + url.QueryEscape(victim.name)
		r = call(t, sw.url, request{method: http.MethodGet, path: path, key: key})
		r.wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	case "own": // the same key reads its own tenant's task: the sweep is not trivially 404
		own := pick(sw.rng, slices.Sorted(maps.Keys(attacker.ids)))
		r = call(t, sw.url, request{method: http.MethodGet, path: "/v1/tasks/" + own, key: key})
		sw.ownTask(attacker, http.StatusOK, r.task(t))
	}
	sw.noOtherTenant(attacker, r)
}

// alter returns the victim's ID as is, or changed in a way that must not
// reach any task either.
func (sw *sweep) alter(id string) string {
	switch sw.rng.IntN(6) {
	case 0:
		return strings.ToUpper(id)
	case 1:
		return id + " "
	case 2:
		return id[:len(id)-1]
	case 3:
		return id + "%"
	}
	return id
}

// list pages the attacker's tasks from a victim's cursor or task ID, with
// random filters: only the attacker's tasks, never the victim's.
func (sw *sweep) list(attacker, victim *sweepTenant, key string) response {
	t := sw.t
	t.Helper()
	q := url.Values{}
	cursors := append(slices.Clone(victim.cursors), slices.Sorted(maps.Keys(victim.ids))...)
	q.Set("after", pick(sw.rng, cursors))
	q.Set("limit", fmt.Sprint(1+sw.rng.IntN(5)))
	if sw.rng.IntN(2) == 0 {
		q.Set("state", string(pick(sw.rng, dockettype.States)))
	}
	if sw.rng.IntN(2) == 0 {
		q.Set("pool", pick(sw.rng, []string{"online", "offline"}))
	}
	r := call(t, sw.url, request{method: http.MethodGet, path: "/v1/tasks?" + q.Encode(), key: key})
	r.wantStatus(t, http.StatusOK)
	var page struct {
		Tasks []*dockettype.Task `json:"tasks"`
	}
	r.decode(t, &page)
	for _, task := range page.Tasks {
		if task.Tenant != attacker.name || !attacker.ids[task.ID] && !attacker.created[task.ID] {
			t.Fatalf("%s listed %+v with %s", attacker.name, task, q.Encode())
		}
	}
	return r
}

// ownTask checks that a submission answered with one of the attacker's own
// tasks (200 replay) or a new one (201), which it records.
func (sw *sweep) ownTask(attacker *sweepTenant, status int, task *dockettype.Task) {
	t := sw.t
	t.Helper()
	if task == nil || task.Tenant != attacker.name {
		t.Fatalf("%s was answered %d with task %+v", attacker.name, status, task)
	}
	for _, other := range sw.tenants {
		if other != attacker && (other.ids[task.ID] || other.created[task.ID]) {
			t.Fatalf("%s was answered with %s's task %s", attacker.name, other.name, task.ID)
		}
	}
	switch {
	case status == http.StatusCreated:
		attacker.created[task.ID] = true
		attacker.ids[task.ID] = true
	case status != http.StatusOK || !attacker.ids[task.ID]:
		t.Fatalf("%s was answered %d with a task it does not know: %+v", attacker.name, status, task)
	}
}

// noOtherTenant fails when an answer to the attacker carries another
// tenant's name or one of its task IDs.
func (sw *sweep) noOtherTenant(attacker *sweepTenant, r response) {
	t := sw.t
	t.Helper()
	body := string(r.body)
	for _, other := range sw.tenants {
		if other == attacker {
			continue
		}
		if strings.Contains(body, other.name) {
			t.Fatalf("an answer to %s names %s: %s", attacker.name, other.name, body)
		}
		for id := range other.ids {
			if strings.Contains(body, id) {
				t.Fatalf("an answer to %s carries %s's task %s: %s", attacker.name, other.name, id, body)
			}
		}
	}
}
