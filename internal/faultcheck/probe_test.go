package faultcheck

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/binding"
	"github.com/docket-dev/docket/workflow"
)

func TestProbeLogsEveryExecution(t *testing.T) {
	dir := t.TempDir()
	reg := workflow.NewRegistry()
	closer, err := RegisterProbe(reg, dir, clockwork.NewFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	def, ok := reg.Lookup(ProbeWorkflow)
	if !ok {
		t.Fatal("the probe is not registered")
	}
	run := func(tenant, task string, epoch int64, attempt int, in probeInput) (json.RawMessage, error) {
		input, _ := json.Marshal(in)
		b := binding.New[*workflow.Binding](binding.Params{TaskID: task, Tenant: tenant, LeaseEpoch: epoch, Attempt: attempt})
		return def.Run(context.Background(), b, input)
	}
	// Fails retryably on attempt 1, succeeds on attempt 2.
	_, err = run("t1", "task-1", 1, 1, probeInput{Key: "k1", FailUntil: 1})
	var f *dockettype.Failure
	if !errors.As(err, &f) || f.Code != codeProbeRetry || !f.Retryable {
		t.Fatalf("attempt 1: %v, want a retryable %s", err, codeProbeRetry)
	}
	out, err := run("t1", "task-1", 2, 2, probeInput{Key: "k1", FailUntil: 1})
	if err != nil {
		t.Fatal(err)
	}
	var res probeResult
	if err := json.Unmarshal(out, &res); err != nil || res.Task != "task-1" || res.Epoch != 2 || res.Key != "k1" {
		t.Fatalf("result %s (%v), want task-1 under epoch 2", out, err)
	}
	if _, err := run("t1", "task-2", 1, 1, probeInput{Fail: true}); !errors.As(err, &f) || f.Code != codeProbeFail || f.Retryable {
		t.Fatalf("fail: %v, want a permanent %s", err, codeProbeFail)
	}
	if _, err := run("other", "task-3", 1, 1, probeInput{}); err != nil {
		t.Fatal(err)
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}

	recs, err := ReadExecLogs(dir, []string{"t1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Event+" "+r.Task+" "+r.Outcome)
	}
	want := []string{"start task-1 ", "end task-1 retry", "start task-1 ", "end task-1 ok", "start task-2 ", "end task-2 fail"}
	if len(got) != len(want) {
		t.Fatalf("records %q, want %q (another tenant's left out)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("records %q, want %q", got, want)
		}
	}
}

// TestTermMarkSplitsTheExecutionLog: the checker's term mark lands between
// the lines the process logged before and after it, and is read back with
// them (it names no tenant), so the executions that ended after it are
// those of the shutdown.
func TestTermMarkSplitsTheExecutionLog(t *testing.T) {
	dir := t.TempDir()
	reg := workflow.NewRegistry()
	closer, err := RegisterProbe(reg, dir, clockwork.NewFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	def, _ := reg.Lookup(ProbeWorkflow)
	run := func(task string) {
		t.Helper()
		b := binding.New[*workflow.Binding](binding.Params{TaskID: task, Tenant: "t1", LeaseEpoch: 1, Attempt: 1})
		if _, err := def.Run(context.Background(), b, json.RawMessage(`{"key":"k"}`)); err != nil {
			t.Fatal(err)
		}
	}
	run("before")
	if err := markTerm(dir, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	run("after")

	recs, err := ReadExecLogs(dir, []string{"t1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Event+" "+r.Task)
	}
	want := []string{"start before", "end before", "term ", "start after", "end after"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("records %q, want %q", got, want)
	}
	p := parse(&CheckInput{Execs: recs})
	if p.execs[lease{"before", 1}].inShutdown || !p.execs[lease{"after", 1}].inShutdown {
		t.Errorf("in shutdown: before %v, after %v; want false, true",
			p.execs[lease{"before", 1}].inShutdown, p.execs[lease{"after", 1}].inShutdown)
	}
}
