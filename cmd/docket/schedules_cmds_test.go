package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// An admin puts, lists, reads, pauses, resumes and deletes a schedule
// through the CLI; the server refuses a bad cron expression, an unknown
// workflow and a member key.
func TestSchedulesCommands(t *testing.T) {
	s := stack(t)
	admin := s.NewAdminKeyFor(t, "ops", "root")
	flags := []string{"--url", s.URL, "--key", admin}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, flags...)...)
	}
	code, out, errOut := cli("schedules", "put", "weekday.report", "--tenant", httpapitest.Tenant, "--workflow", "demo.echo",
		"--cron", "0 9 * * MON-FRI", "--time-zone", "Europe/Paris", "--input", `{"report":"daily"}`,
		"--overlap", "skip", "--missed", "catch_up", "--catch-up-limit", "2")
	var sc scheduleJSON
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil {
		t.Fatalf("put: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var in bytes.Buffer
	_ = json.Compact(&in, sc.Input)
	if sc.Name != "weekday.report" || sc.TimeZone != "Europe/Paris" || sc.Overlap != "skip" || sc.CatchUpLimit != 2 ||
		in.String() != `{"report":"daily"}` || len(sc.NextFireTimes) != 5 {
		t.Errorf("put answered %+v", sc)
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	for _, ft := range sc.NextFireTimes {
		if local := ft.In(paris); local.Hour() != 9 || local.Weekday() == time.Saturday || local.Weekday() == time.Sunday {
			t.Errorf("next fire time %s is not a weekday 09:00 in Paris", local)
		}
	}

	if code, _, errOut = cli("schedules", "put", "bad", "--tenant", "acme", "--workflow", "demo.echo", "--cron", "at nine"); code != 1 || !strings.Contains(errOut, "invalid_request") {
		t.Errorf("put with a bad cron: exit %d, %q", code, errOut)
	}
	if code, _, errOut = cli("schedules", "put", "bad", "--tenant", "acme", "--workflow", "no.such", "--cron", "@hourly"); code != 1 || !strings.Contains(errOut, "unknown_workflow") {
		t.Errorf("put with an unknown workflow: exit %d, %q", code, errOut)
	}
	if code, _, errOut = runCLI(t, "schedules", "list", "--url", s.URL, "--key", s.Key); code != 1 || !strings.Contains(errOut, "forbidden") {
		t.Errorf("list with a member key: exit %d, %q", code, errOut)
	}
	if code, _, errOut = cli("schedules", "put", "--tenant", "acme"); code != 1 || !strings.Contains(errOut, "usage") {
		t.Errorf("put without a name: exit %d, %q", code, errOut)
	}

	code, out, _ = cli("schedules", "list")
	var list struct{ Schedules []scheduleJSON }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Schedules) != 1 {
		t.Fatalf("list: exit %d, %q", code, out)
	}
	code, out, _ = cli("schedules", "pause", "weekday.report")
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil || !sc.Paused || len(sc.NextFireTimes) != 0 {
		t.Errorf("pause: exit %d, %q", code, out)
	}
	code, out, _ = cli("schedules", "resume", "weekday.report")
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil || sc.Paused {
		t.Errorf("resume: exit %d, %q", code, out)
	}
	code, out, _ = cli("schedules", "get", "weekday.report")
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil || sc.Runs == nil {
		t.Errorf("get: exit %d, %q; want the schedule with its runs", code, out)
	}
	if code, out, _ = cli("schedules", "delete", "weekday.report"); code != 0 || !strings.Contains(out, "deleted schedule weekday.report") {
		t.Errorf("delete: exit %d, %q", code, out)
	}
	if code, _, errOut = cli("schedules", "get", "weekday.report"); code != 1 || !strings.Contains(errOut, "not_found") {
		t.Errorf("get after delete: exit %d, %q", code, errOut)
	}
}

// The terminal form shows the next fire times in the schedule's zone and
// the latest runs.
func TestPrintSchedule(t *testing.T) {
	fire := time.Date(2026, 11, 2, 14, 0, 0, 0, time.UTC)
	running, errCode := "running", "unknown_workflow"
	sc := &scheduleJSON{Name: "n", Tenant: "acme", Workflow: "demo.echo", Cron: "0 9 * * *", TimeZone: "America/New_York",
		Overlap: "allow", Missed: "catch_up", CatchUpLimit: 3, NextFireTimes: []time.Time{fire}, Fired: 7, LastError: &errCode}
	sc.Runs = &[]struct {
		FireAt time.Time `json:"fire_at"`
		TaskID string    `json:"task_id"`
		State  *string   `json:"state"`
	}{{FireAt: fire.Add(-24 * time.Hour), TaskID: "t-2", State: &running}, {FireAt: fire.Add(-48 * time.Hour), TaskID: "t-1"}}
	var b bytes.Buffer
	printSchedule(&b, sc)
	for _, want := range []string{"missed catch_up (up to 3)", "fired 7", "last refused: unknown_workflow",
		"2026-11-02 09:00:00 EST  (2026-11-02T14:00:00Z)", "t-2  running", "t-1  deleted"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
