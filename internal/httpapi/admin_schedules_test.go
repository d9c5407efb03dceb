package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
)

// A schedule's runs show each task's state, null once retention deleted
// the task; a workflow-default pool and no last task are null too.
func TestScheduleBodyRuns(t *testing.T) {
	fire := time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC)
	sc := &queue.Schedule{Schedule: store.Schedule{ScheduleSpec: store.ScheduleSpec{Name: "n", Input: json.RawMessage(`1`)}},
		Runs: []store.ScheduleRun{{FireAt: fire, TaskID: "t-2", State: dockettype.StateRunning}, {FireAt: fire.Add(-time.Minute), TaskID: "t-1"}}}
	b, err := json.Marshal(scheduleOf(sc, true))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"runs":[{"fire_at":"2026-10-12T09:00:00Z","task_id":"t-2","state":"running"},{"fire_at":"2026-10-12T08:59:00Z","task_id":"t-1","state":null}]`,
		`"pool":null`, `"last_task_id":null`, `"last_error":null`, `"next_fire_times":[]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("body %s lacks %s", b, want)
		}
	}
	if b, _ := json.Marshal(scheduleOf(sc, false)); strings.Contains(string(b), `"runs"`) {
		t.Errorf("a listed schedule carries runs: %s", b)
	}
}
