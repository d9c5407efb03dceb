package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

func waitTask(t *testing.T, s *httpapitest.Stack, id string) *dockettype.Task {
	t.Helper()
	return call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + id + "?wait=20s", key: s.Key}).task(t)
}

func eventsOf(t *testing.T, s *httpapitest.Stack, id string) []dockettype.Event {
	t.Helper()
	var body struct{ Events []dockettype.Event }
	call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + id + "/events", key: s.Key}).decode(t, &body)
	return body.Events
}

// eventID returns the ID of the task's first event into state to.
func eventID(t *testing.T, evs []dockettype.Event, to dockettype.State) int64 {
	t.Helper()
	for _, e := range evs {
		if e.To == to {
			return e.ID
		}
	}
	t.Fatalf("no event into %s in %+v", to, evs)
	return 0
}

// A batch carries a graph by idempotency key: the join waits
// (waiting_on dependencies) and runs after both of its dependencies
// succeeded, as the history shows; a replay answers the same tasks; a
// cycle, a forward reference or an unknown ID refuses the whole batch.
func TestDependenciesThroughHTTP(t *testing.T) {
	httpapitest.ForEachDatabase(t, func(t *testing.T, db httpapitest.Database) {
		s := httpapitest.New(t, httpapitest.Options{Store: db.Open(t)})
		graph := `{"tasks":[
			{"idempotency_key":"a","workflow":"demo.sleep","input":{"ms":50}},
			{"idempotency_key":"b","workflow":"demo.echo","input":2},
			{"idempotency_key":"join","workflow":"demo.echo","input":3,"depends_on":["a","b"]}]}`
		r := postBatch(t, s.URL, s.Key, graph)
		r.wantStatus(t, http.StatusOK)
		var ans batchAnswer
		r.decode(t, &ans)
		for i, res := range ans.Results {
			if res.Status != http.StatusCreated {
				t.Fatalf("item %d: %d %+v, want 201", i, res.Status, res.Error)
			}
		}
		a, b, join := ans.Results[0].Task, ans.Results[1].Task, ans.Results[2].Task
		if join.WaitingOn != dockettype.WaitingOnDependencies || !slices.Equal(join.DependsOn, []string{a.ID, b.ID}) {
			t.Errorf("join answered with waiting_on %q depends_on %v, want dependencies and [a b]", join.WaitingOn, join.DependsOn)
		}
		if !strings.Contains(string(r.body), `"waiting_on":"dependencies"`) || !strings.Contains(string(r.body), `"waiting_on":null`) {
			t.Errorf("batch answer %s: want waiting_on dependencies for the join and null for the others", r.body)
		}
		done := waitTask(t, s, join.ID)
		if done.State != dockettype.StateSucceeded || done.WaitingOn != "" || !slices.Equal(done.DependsOn, []string{a.ID, b.ID}) {
			t.Fatalf("join = %s waiting_on %q depends_on %v, want succeeded with its dependencies listed", done.State, done.WaitingOn, done.DependsOn)
		}
		started := eventID(t, eventsOf(t, s, join.ID), dockettype.StateRunning)
		for _, dep := range []*dockettype.Task{a, b} {
			if ok := eventID(t, eventsOf(t, s, dep.ID), dockettype.StateSucceeded); ok > started {
				t.Errorf("join started (event %d) before dependency %s succeeded (event %d)", started, dep.ID, ok)
			}
		}

		// Replay: the same tasks.
		r = postBatch(t, s.URL, s.Key, graph)
		var again batchAnswer
		r.decode(t, &again)
		for i, res := range again.Results {
			if res.Status != http.StatusOK || res.Task.ID != ans.Results[i].Task.ID {
				t.Errorf("replayed item %d: %d %v, want 200 with the same task", i, res.Status, res.Task)
			}
		}

		for name, body := range map[string]string{
			"cycle": `{"tasks":[{"idempotency_key":"x","workflow":"demo.echo","depends_on":["y"]},
				{"idempotency_key":"y","workflow":"demo.echo","depends_on":["x"]}]}`,
			"self":    `{"tasks":[{"idempotency_key":"x","workflow":"demo.echo","depends_on":["x"]}]}`,
			"forward": `{"tasks":[{"idempotency_key":"x","workflow":"demo.echo","depends_on":["y"]},{"idempotency_key":"y","workflow":"demo.echo"}]}`,
			"unknown": `{"tasks":[{"idempotency_key":"x","workflow":"demo.echo"},{"idempotency_key":"y","workflow":"demo.echo","depends_on":["` + a.ID + `","no-such-task"]}]}`,
		} {
			e := postBatch(t, s.URL, s.Key, body).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidDependency)
			if name == "cycle" && !strings.Contains(e.Error.Message, "cycle") {
				t.Errorf("cycle refused with %q, want the message to say cycle", e.Error.Message)
			}
		}
		// Nothing of the refused batches was admitted: their keys are free.
		submit(t, s.URL, s.Key, "x", `{"workflow":"demo.echo","input":"x"}`).wantStatus(t, http.StatusCreated)
		submit(t, s.URL, s.Key, "y", `{"workflow":"demo.echo","input":"y"}`).wantStatus(t, http.StatusCreated)

		// Another tenant's task is unknown too.
		otherKey, err := s.NewKey(t.Context(), "other-tenant", "bob")
		if err != nil {
			t.Fatal(err)
		}
		theirs := mustSubmit(t, s.URL, otherKey, "theirs", `{"workflow":"demo.echo"}`)
		submit(t, s.URL, s.Key, "mine", `{"workflow":"demo.echo","depends_on":["`+theirs.ID+`"]}`).
			wantError(t, http.StatusBadRequest, dockettype.CodeInvalidDependency)
		submit(t, s.URL, s.Key, "bad-policy", `{"workflow":"demo.echo","depends_on":["`+a.ID+`"],"on_dependency_failure":"maybe"}`).
			wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	})
}

// A dependency that fails ends its dependents failed with dependency_failed
// (and theirs after them), unless they run anyway; a cancelled one cancels
// its waiting dependents.
func TestDependencyFailureThroughHTTP(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{})
	boom := mustSubmit(t, s.URL, s.Key, "boom", `{"workflow":"demo.fail","input":{"code":"boom","retryable":false}}`)
	dep := mustSubmit(t, s.URL, s.Key, "dep", `{"workflow":"demo.echo","depends_on":["`+boom.ID+`"]}`)
	depdep := mustSubmit(t, s.URL, s.Key, "depdep", `{"workflow":"demo.echo","depends_on":["`+dep.ID+`"]}`)
	runs := mustSubmit(t, s.URL, s.Key, "runs", `{"workflow":"demo.echo","input":7,"depends_on":["`+boom.ID+`"],"on_dependency_failure":"run"}`)
	for _, id := range []string{dep.ID, depdep.ID} {
		if got := waitTask(t, s, id); got.State != dockettype.StateFailed || got.Error == nil || got.Error.Code != dockettype.CodeDependencyFailed {
			t.Errorf("dependent %s = %s %+v, want failed dependency_failed", id, got.State, got.Error)
		}
	}
	if got := waitTask(t, s, runs.ID); got.State != dockettype.StateSucceeded || string(got.Result) != "7" {
		t.Errorf("run-anyway dependent = %s %s, want succeeded", got.State, got.Result)
	}

	sleeper := mustSubmit(t, s.URL, s.Key, "sleeper", `{"workflow":"demo.sleep","input":{"ms":60000}}`)
	waiting := mustSubmit(t, s.URL, s.Key, "waiting", `{"workflow":"demo.echo","depends_on":["`+sleeper.ID+`"]}`)
	if waiting.WaitingOn != dockettype.WaitingOnDependencies {
		t.Errorf("waiting_on = %q, want dependencies", waiting.WaitingOn)
	}
	call(t, s.URL, request{method: http.MethodPost, path: "/v1/tasks/" + sleeper.ID + "/cancel", key: s.Key}).wantStatus(t, http.StatusOK)
	got := call(t, s.URL, request{method: http.MethodGet, path: "/v1/tasks/" + waiting.ID, key: s.Key}).task(t)
	if got.State != dockettype.StateCancelled || got.Error == nil || got.Error.Code != dockettype.CodeDependencyFailed {
		t.Errorf("dependent of a cancelled task = %s %+v, want cancelled with dependency_failed (in the cancel's transaction)", got.State, got.Error)
	}
}
