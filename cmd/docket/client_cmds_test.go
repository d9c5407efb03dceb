package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/queue"
)

// stack starts an in-process server whose pools run nothing, so that tasks
// stay queued.
func stack(t *testing.T) *httpapitest.Stack {
	t.Helper()
	return httpapitest.New(t, httpapitest.Options{Queue: queue.Config{
		Online: queue.PoolConfig{Workers: -1}, Offline: queue.PoolConfig{Workers: -1},
	}})
}

// submitTask submits a demo.echo task through the CLI and returns it.
func submitTask(t *testing.T, s *httpapitest.Stack, key string) *dockettype.Task {
	t.Helper()
	code, out, errOut := runCLI(t, "submit", "--url", s.URL, "--key", key, "--workflow", "demo.echo", "--input", `{"n":1}`)
	if code != 0 {
		t.Fatalf("submit: exit %d: %s", code, errOut)
	}
	var task dockettype.Task
	if err := json.Unmarshal([]byte(out), &task); err != nil || task.ID == "" {
		t.Fatalf("submit printed %q (%v)", out, err)
	}
	return &task
}

func TestFlagsBeforeOrAfterTheID(t *testing.T) {
	s := stack(t)
	task := submitTask(t, s, s.Key)
	for _, args := range [][]string{
		{"get", "--url", s.URL, "--key", s.Key, "--wait", "1ms", task.ID},
		{"get", task.ID, "--url", s.URL, "--key", s.Key, "--wait", "1ms"},
		{"get", "--url", s.URL, task.ID, "--key", s.Key},
		{"events", "--key", s.Key, "--url", s.URL, task.ID},
		{"cancel", "--url", s.URL, "--key", s.Key, task.ID},
		{"evidence", "--url", s.URL, "--key", s.Key, task.ID},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, task.ID) && args[0] != "evidence" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{
		{"get", "--url", s.URL, "--key", s.Key},
		{"get", "--url", s.URL, "--key", s.Key, task.ID, task.ID},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.HasPrefix(errOut, "usage: docket get [flags] ID\n") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the usage", args, code, errOut)
		}
	}
}

func TestListJSONAndTable(t *testing.T) {
	s := stack(t)
	var ids []string
	for range 3 {
		ids = append(ids, submitTask(t, s, s.Key).ID)
	}
	// Not a terminal: the API's JSON, field names included.
	code, out, errOut := runCLI(t, "list", "--url", s.URL, "--key", s.Key, "--limit", "2")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	var page map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		t.Fatalf("list printed %q: %v", out, err)
	}
	var tasks []dockettype.Task
	var next string
	if err := json.Unmarshal(page["tasks"], &tasks); err != nil || len(tasks) != 2 || len(page) != 2 {
		t.Fatalf("list JSON = %s; want exactly the members tasks (2 of them) and next", out)
	}
	if err := json.Unmarshal(page["next"], &next); err != nil || next != ids[1] {
		t.Fatalf("next = %s, want %s", page["next"], ids[1])
	}
	if strings.Contains(out, `"Tasks"`) || strings.Contains(out, `"Next"`) {
		t.Fatalf("list prints Go field names: %s", out)
	}

	code, out, _ = runCLI(t, "list", "--url", s.URL, "--key", s.Key, "--json=false", "--limit", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0], "STATE") ||
		!strings.HasPrefix(lines[1], ids[2]) || !strings.Contains(lines[1], "queued") || !strings.Contains(lines[1], "demo.echo") ||
		lines[4] != "next page: add --after "+ids[1] {
		t.Fatalf("list --json=false: exit %d:\n%s", code, out)
	}
}

func TestErrorsDoNotRepeatTheirPrefix(t *testing.T) {
	s := stack(t)
	code, _, errOut := runCLI(t, "submit", "--url", s.URL, "--key", s.Key, "--workflow", "no.such")
	if code != 1 || !strings.HasPrefix(errOut, "docket submit: unknown_workflow (HTTP 400): ") || strings.Count(errOut, "docket") != 1 {
		t.Fatalf("unknown workflow: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "list", "--url", s.URL, "--key", s.Key, "--after", "bogus")
	if code != 1 || !strings.HasPrefix(errOut, "docket list: invalid_request (HTTP 400): after must be") {
		t.Fatalf("list --after bogus: exit %d, stderr %q", code, errOut)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "serve"}, {"serve", "--help"}, {"serve", "-h"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: docket serve [flags]\n") {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want serve's help on stdout, exit 0", args, code, out, errOut)
		}
		for _, want := range []string{"--lease-ttl duration   $DOCKET_LEASE_TTL", "--db string   $DOCKET_DB", `(default "./docket.db")`,
			"--default-tenant-limit int   $DOCKET_DEFAULT_TENANT_LIMIT", "--max-connections", "--body-timeout", "--max-waits-per-tenant"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: help lacks %q:\n%s", args, want, out)
			}
		}
	}
	code, out, _ := runCLI(t, "get", "--help")
	if code != 0 || !strings.HasPrefix(out, "usage: docket get [flags] ID\n") || !strings.Contains(out, "--key string   $DOCKET_API_KEY") ||
		!strings.Contains(out, "--url string   $DOCKET_URL") {
		t.Fatalf("get --help: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "help", "keys", "create")
	if code != 0 || !strings.HasPrefix(out, "usage: docket keys create --tenant T") {
		t.Fatalf("help keys create: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"keys", "--help"}, {"help", "tenants"}, {"rules", "-h"}} {
		if code, out, _ := runCLI(t, args...); code != 0 || !strings.HasPrefix(out, "usage: docket "+args[len(args)-1]) && !strings.HasPrefix(out, "usage: docket "+args[0]) {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	// A usage error is exit 2, on stderr, with a hint.
	code, out, errOut := runCLI(t, "serve", "--no-such-flag")
	if code != 2 || out != "" || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag") ||
		!strings.Contains(errOut, "Run 'docket serve --help' for its flags.") {
		t.Fatalf("bad flag: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "keys", "frobnicate"); code != 2 || !strings.HasPrefix(errOut, "usage: docket keys create") {
		t.Fatalf("keys frobnicate: exit %d, stderr %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "docket ") || strings.Count(out, "\n") != 1 {
		t.Fatalf("version: exit %d %q", code, out)
	}
}

// submit takes --json as list does: the API's JSON when asked (and when
// stdout is not a terminal), a summary for a person otherwise.
func TestSubmitJSONAndSummary(t *testing.T) {
	s := stack(t)
	code, out, errOut := runCLI(t, "submit", "--url", s.URL, "--key", s.Key, "--workflow", "demo.echo", "--json")
	var task dockettype.Task
	if code != 0 || json.Unmarshal([]byte(out), &task) != nil || task.ID == "" || task.State != dockettype.StateQueued {
		t.Fatalf("submit --json: exit %d, stdout %q, stderr %q; want the task as JSON", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "submit", "--url", s.URL, "--key", s.Key, "--workflow", "demo.echo", "--json=false")
	lines := strings.Split(out, "\n")
	if code != 0 || !strings.HasPrefix(lines[0], "id ") || !strings.Contains(out, "\nstate     queued\n") ||
		!strings.Contains(out, "workflow  demo.echo (pool online)") || !strings.Contains(out, "follow it: docket get --wait 30s ") {
		t.Fatalf("submit --json=false: exit %d, stdout:\n%s\nstderr %q", code, out, errOut)
	}
}

// submit --depends-on makes a task that waits; the summary says on what.
func TestSubmitDependsOn(t *testing.T) {
	s := stack(t)
	first := submitTask(t, s, s.Key)
	code, out, errOut := runCLI(t, "submit", "--url", s.URL, "--key", s.Key, "--workflow", "demo.echo",
		"--depends-on", first.ID, "--on-dependency-failure", "run", "--json=false")
	if code != 0 || !strings.Contains(out, "waiting on  dependencies\n") || !strings.Contains(out, "depends on  "+first.ID+"\n") {
		t.Fatalf("submit --depends-on: exit %d, stdout:\n%s\nstderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "submit", "--url", s.URL, "--key", s.Key, "--workflow", "demo.echo", "--depends-on", "no-such-task")
	if code == 0 || !strings.Contains(errOut, "invalid_dependency") {
		t.Fatalf("submit --depends-on an unknown task: exit %d, stderr %q; want invalid_dependency", code, errOut)
	}
}
