package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

// Failed tasks are seen grouped, retried one by one and in bulk through
// the CLI, against a running server.
func TestRetryBulkAndDeadLettersCommands(t *testing.T) {
	s := httpapitest.New(t, httpapitest.Options{})
	cli := func(args ...string) (int, string, string) {
		return runCLI(t, append(args, "--url", s.URL, "--key", s.Key)...)
	}
	var ids []string
	for i := range 3 {
		code, out, errOut := cli("submit", "--workflow", "demo.fail", "--input", `{"code":"upstream_down"}`,
			"--max-attempts", "1", "--idempotency-key", fmt.Sprint("fail-", i), "--wait", "20s", "--json")
		var task dockettype.Task
		if code != 0 || json.Unmarshal([]byte(out), &task) != nil || task.State != dockettype.StateFailed {
			t.Fatalf("submit demo.fail: exit %d, %q, %q; want a failed task", code, out, errOut)
		}
		ids = append(ids, task.ID)
	}
	ok := submitTask(t, s, s.Key)

	code, out, errOut := cli("dead-letters", "--json")
	if code != 0 || !strings.Contains(out, `"workflow": "demo.fail"`) || !strings.Contains(out, `"error_code": "upstream_down"`) ||
		!strings.Contains(out, `"count": 3`) {
		t.Errorf("dead-letters: exit %d, %q, %q; want one group of 3", code, out, errOut)
	}

	code, out, errOut = cli("retry", ids[0])
	var task dockettype.Task
	if code != 0 || json.Unmarshal([]byte(out), &task) != nil || task.ID != ids[0] || task.State.Terminal() {
		t.Errorf("retry: exit %d, %q, %q; want the task live again", code, out, errOut)
	}
	if code, _, errOut = cli("get", ok.ID, "--wait", "20s"); code != 0 {
		t.Fatalf("get --wait: %s", errOut)
	}
	if code, _, errOut = cli("retry", ok.ID); code != 1 || !strings.Contains(errOut, "not_retryable") {
		t.Errorf("retry of a succeeded task: exit %d, %q; want 1 and not_retryable", code, errOut)
	}
	// Wait for the retried one to fail again, then retry all three in bulk.
	if code, _, errOut = cli("get", ids[0], "--wait", "20s"); code != 0 {
		t.Fatalf("get --wait: %s", errOut)
	}
	code, out, errOut = cli("bulk", "retry", "--state", "failed", "--workflow", "demo.fail", "--wait", "20s", "--json")
	var job bulkJSON
	if code != 0 || json.Unmarshal([]byte(out), &job) != nil {
		t.Fatalf("bulk retry: exit %d, %q, %q", code, out, errOut)
	}
	if job.State != "done" || job.Matched != 3 || job.Done != 3 || job.Failed != 0 {
		t.Errorf("bulk retry job %+v, want done with 3 matched and retried", job)
	}
	code, out, _ = cli("bulk", "status", job.ID)
	if code != 0 || !strings.Contains(out, job.ID) {
		t.Errorf("bulk status: exit %d, %q", code, out)
	}
	if code, _, errOut = cli("bulk", "status", "--admin", job.ID); code != 1 || !strings.Contains(errOut, "forbidden") {
		t.Errorf("bulk status --admin with a member key: exit %d, %q; want forbidden", code, errOut)
	}
	code, out, _ = cli("bulk", "stop", job.ID, "--json")
	if code != 0 || !strings.Contains(out, `"state": "done"`) {
		t.Errorf("bulk stop of a done job: exit %d, %q; want it done", code, out)
	}
	if code, _, errOut = cli("bulk", "explode"); code != 2 {
		t.Errorf("bulk explode: exit %d, %q; want the usage", code, errOut)
	}
	for _, id := range ids {
		evs := 0
		code, out, _ = cli("events", id)
		if code == 0 {
			evs = strings.Count(out, `"code": "retried"`)
		}
		if want := map[bool]int{true: 2, false: 1}[id == ids[0]]; evs != want {
			t.Errorf("task %s has %d retried events, want %d", id, evs, want)
		}
	}
}
