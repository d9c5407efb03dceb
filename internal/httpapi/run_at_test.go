package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// A submission may carry run_at: the task shows it, is not started before
// it, and its deadline counts from it; the same key with another run_at is
// another request.
func TestSubmitRunAt(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly})
	runAt := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
	body := `{"workflow":"demo.echo","input":1,"timeout_ms":60000,"run_at":"` + runAt.Format(time.RFC3339Nano) + `"}`

	r := submit(t, s.URL, s.Key, "sched-1", body)
	r.wantStatus(t, http.StatusCreated)
	task := r.task(t)
	if task.RunAt == nil || !task.RunAt.Equal(runAt) || task.State != dockettype.StateQueued {
		t.Fatalf("task = %+v, want queued with run_at %s", task, runAt)
	}
	if want := runAt.Add(time.Minute); !task.DeadlineAt.Equal(want) {
		t.Errorf("deadline = %s, want run_at + timeout = %s", task.DeadlineAt, want)
	}
	got := call(t, s.URL, request{method: "GET", path: "/v1/tasks/" + task.ID, key: s.Key}).task(t)
	if got.RunAt == nil || !got.RunAt.Equal(runAt) {
		t.Errorf("read back run_at = %v, want %s", got.RunAt, runAt)
	}
	// Replays match only the same run_at.
	submit(t, s.URL, s.Key, "sched-1", body).wantStatus(t, http.StatusOK)
	other := `{"workflow":"demo.echo","input":1,"timeout_ms":60000,"run_at":"` + runAt.Add(time.Second).Format(time.RFC3339Nano) + `"}`
	submit(t, s.URL, s.Key, "sched-1", other).wantError(t, http.StatusConflict, dockettype.CodeIdempotencyConflict)

	for name, body := range map[string]string{
		"not a time":   `{"workflow":"demo.echo","run_at":"tomorrow"}`,
		"not a string": `{"workflow":"demo.echo","run_at":1767225600}`,
		"too far":      `{"workflow":"demo.echo","run_at":"` + time.Now().Add(400*24*time.Hour).UTC().Format(time.RFC3339) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			submit(t, s.URL, s.Key, "bad-"+name, body).wantError(t, http.StatusBadRequest, dockettype.CodeInvalidRequest)
		})
	}
}
