package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// listFixture is what FuzzListQuery lists: the stack tenant's tasks,
// queued or cancelled, in both pools, of two workflows, and another
// tenant's.
type listFixture struct {
	own   []*dockettype.Task // sorted newest first
	other []*dockettype.Task
}

func newListFixture(f *testing.F, stack *httpapitest.Stack) *listFixture {
	f.Helper()
	ctx := context.Background()
	otherKey, err := stack.NewKey(ctx, "globex", "bob")
	if err != nil {
		f.Fatal(err)
	}
	fx := &listFixture{}
	create := func(key string, i int) *dockettype.Task {
		pool := []string{"online", "offline"}[i%2]
		workflow := []string{"demo.echo", "demo.echo", "demo.fail"}[i%3]
		body := fmt.Sprintf(`{"workflow":%q,"pool":%q,"input":{"n":%d,"note":%q}}`, workflow, pool, i, canary)
		task := mustSubmitF(f, stack.URL, key, fmt.Sprintf("list-%d", i), body)
		if i%3 == 0 {
			if _, err := stack.Service.Cancel(ctx, dockettype.Principal{Tenant: task.Tenant, Name: task.Author}, task.ID); err != nil {
				f.Fatal(err)
			}
			task.State = dockettype.StateCancelled
		}
		return task
	}
	for i := range 12 {
		fx.own = append(fx.own, create(stack.Key, i))
	}
	for i := range 4 {
		fx.other = append(fx.other, create(otherKey, i))
	}
	slices.SortFunc(fx.own, func(a, b *dockettype.Task) int { return strings.Compare(b.ID, a.ID) })
	return fx
}

// mustSubmitF submits over HTTP during a fuzz target's setup.
func mustSubmitF(f *testing.F, baseURL, key, idemKey, body string) *dockettype.Task {
	f.Helper()
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/tasks", strings.NewReader(body))
	if err != nil {
		f.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.Fatal(err)
	}
	defer resp.Body.Close()
	var task dockettype.Task
	if err := json.NewDecoder(resp.Body).Decode(&task); err != nil || resp.StatusCode != http.StatusCreated {
		f.Fatalf("submit: status %d, %v", resp.StatusCode, err)
	}
	return &task
}

// expand replaces $0 to $9 with the IDs of the fixture's own tasks, $g
// with another tenant's.
func (fx *listFixture) expand(q string) string {
	q = strings.ReplaceAll(q, "$g", fx.other[0].ID)
	for i := 9; i >= 0; i-- {
		q = strings.ReplaceAll(q, "$"+strconv.Itoa(i), fx.own[i].ID)
	}
	return q
}

var taskIDRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// workflowNameRE is the documented name syntax: a lowercase dotted
// identifier of at most 128 bytes.
var workflowNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// want is the documented answer to a list query: 400 for a malformed
// query, an unknown or repeated parameter, a limit outside 1..500, an
// unknown state or pool, a workflow that is not a workflow's name, or a
// cursor that is not a task ID; otherwise the
// tenant's tasks matching the filters, older than the cursor, newest
// first, one page.
func (fx *listFixture) want(rawQuery string) (tasks []*dockettype.Task, next string, ok bool) {
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, "", false
	}
	for name, vs := range values {
		if len(vs) != 1 || !slices.Contains([]string{"state", "pool", "workflow", "limit", "after"}, name) {
			return nil, "", false
		}
	}
	limit := 50
	if v, ok := values["limit"]; ok {
		if limit, err = strconv.Atoi(v[0]); err != nil || limit < 1 || limit > 500 {
			return nil, "", false
		}
	}
	state, pool, after := dockettype.State(values.Get("state")), dockettype.Pool(values.Get("pool")), values.Get("after")
	workflow := values.Get("workflow")
	if state != "" && !state.Valid() || pool != "" && !pool.Valid() || after != "" && !taskIDRE.MatchString(after) ||
		workflow != "" && (len(workflow) > 128 || !workflowNameRE.MatchString(workflow)) {
		return nil, "", false
	}
	for _, t := range fx.own {
		if (state == "" || t.State == state) && (pool == "" || t.Pool == pool) && (workflow == "" || t.Workflow == workflow) &&
			(after == "" || t.ID < after) {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) > limit {
		tasks = tasks[:limit]
		next = tasks[limit-1].ID
	}
	return tasks, next, true
}

// FuzzListQuery sends any query string to GET /v1/tasks of a real stack
// whose tenant has twelve tasks (and another tenant four). The answer is
// never 5xx: 400 invalid_request for a query the documentation refuses,
// otherwise exactly the page the documentation describes, of the caller's
// tasks only. No log line quotes the query.
func FuzzListQuery(f *testing.F) {
	srv, stack := newStackServer(f, httpapitest.Options{Queue: fuzzQueue})
	fx := newListFixture(f, stack)
	f.Fuzz(func(t *testing.T, rawQuery string) {
		rawQuery = fx.expand(rawQuery)
		r := newRequest(t, http.MethodGet, "/v1/tasks", rawQuery, nil)
		r.Header.Set("Authorization", "Bearer "+stack.Key)
		a := srv.serve(t, r)
		code := checkAnswer(t, a)
		want, wantNext, ok := fx.want(rawQuery)
		if !ok {
			wantCode(t, a, code, dockettype.CodeInvalidRequest)
			return
		}
		wantCode(t, a, code, "")
		var page struct {
			Tasks []*dockettype.Task `json:"tasks"`
			Next  string             `json:"next"`
		}
		if err := json.Unmarshal(a.body, &page); err != nil || page.Tasks == nil {
			t.Fatalf("page %s: %v", a.body, err)
		}
		var got, wantIDs []string
		for _, task := range page.Tasks {
			if task.Tenant != httpapitest.Tenant {
				t.Fatalf("listed another tenant's task %+v", task)
			}
			got = append(got, task.ID+":"+string(task.State)+":"+string(task.Pool))
		}
		for _, task := range want {
			wantIDs = append(wantIDs, task.ID+":"+string(task.State)+":"+string(task.Pool))
		}
		if !slices.Equal(got, wantIDs) || page.Next != wantNext {
			t.Fatalf("query %q: tasks %v next %q, want %v next %q", rawQuery, got, page.Next, wantIDs, wantNext)
		}
	})
}
