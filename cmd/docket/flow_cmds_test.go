package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// An admin pauses and resumes a tenant and limits a workflow and a tenant
// through the CLI; a pause naming two targets and a member key are
// refused.
func TestFlowCommands(t *testing.T) {
	s := stack(t)
	admin := s.NewAdminKeyFor(t, "ops", "root")
	flags := []string{"--url", s.URL, "--key", admin, "--json"}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, flags...)...)
	}
	code, out, errOut := cli("pause", "--tenant", "acme")
	if code != 0 || strings.TrimSpace(out) == "" || !strings.Contains(out, `"tenant": "acme"`) {
		t.Fatalf("pause: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut = cli("pause", "--tenant", "acme", "--pool", "online"); code != 1 || !strings.Contains(errOut, "usage") {
		t.Errorf("pause of two targets: exit %d, %q", code, errOut)
	}
	if code, _, errOut = runCLI(t, "pause", "--pool", "online", "--url", s.URL, "--key", s.Key); code != 1 || !strings.Contains(errOut, "forbidden") {
		t.Errorf("pause with a member key: exit %d, %q", code, errOut)
	}
	// A pause that refuses submissions: the answer says so, a submission
	// through the CLI is refused with its code, resume has no such flag.
	code, out, errOut = cli("pause", "--workflow", "demo.fail", "--refuse-submissions")
	if code != 0 || !strings.Contains(out, `"refuse_submissions": true`) || !strings.Contains(out, `"workflow": "demo.fail"`) {
		t.Fatalf("pause --refuse-submissions: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "submit", "--url", s.URL, "--key", s.Key, "--workflow", "demo.fail", "--idempotency-key", "refused")
	if code != 1 || !strings.Contains(errOut, "submissions_paused") {
		t.Errorf("submit under a refusing pause: exit %d, %q", code, errOut)
	}
	if code, _, errOut = cli("resume", "--workflow", "demo.fail", "--refuse-submissions"); code == 0 {
		t.Errorf("resume --refuse-submissions: exit %d, %q, want a usage error", code, errOut)
	}
	if code, out, _ = cli("resume", "--workflow", "demo.fail"); code != 0 {
		t.Errorf("resume of the workflow: exit %d, %q", code, out)
	}
	code, out, _ = cli("resume", "--tenant", "acme")
	var paused pausedJSON
	if code != 0 || json.Unmarshal([]byte(out), &paused) != nil || len(paused.Paused) != 0 {
		t.Errorf("resume: exit %d, %q", code, out)
	}
	code, out, errOut = cli("limits", "--workflow", "demo.sleep", "--rate", "50", "--burst", "5", "--concurrency-per-key", "2")
	var wf map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &wf) != nil || wf["rate_per_second"] != 50.0 || wf["burst"] != 5.0 || wf["concurrency_per_key"] != 2.0 {
		t.Errorf("limits of a workflow: exit %d, %q, %q", code, out, errOut)
	}
	code, out, _ = cli("limits", "--workflow", "demo.sleep", "--rate", "none")
	if code != 0 || json.Unmarshal([]byte(out), &wf) != nil || wf["rate_per_second"] != nil {
		t.Errorf("removing a workflow's rate limit: exit %d, %q", code, out)
	}
	code, out, _ = cli("limits", "--tenant", "acme", "--rate", "10")
	if code != 0 || !strings.Contains(out, `"rate_per_second": 10`) {
		t.Errorf("limits of a tenant: exit %d, %q", code, out)
	}
	if code, _, errOut = cli("limits", "--workflow", "no.such", "--rate", "1"); code != 1 || !strings.Contains(errOut, "unknown_workflow") {
		t.Errorf("limits of an unknown workflow: exit %d, %q", code, errOut)
	}
}
