package queue

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
)

// A failed task carries its workflow's message (or a fixed reason) in
// error.message for its tenant; the failure is logged with its code and
// IDs, never with the message.
func TestFailureMessageReachesTheTaskNotTheLog(t *testing.T) {
	h := newHarness(t)
	secret := "input needs a \"text\" string " + logtest.Canary
	h.rt.register("test.refuse", dockettype.PoolOnline, func(context.Context, *Invocation) (json.RawMessage, error) {
		return nil, &dockettype.Failure{Code: dockettype.CodeInvalidInput, Message: secret}
	})
	h.rt.register("test.boom", dockettype.PoolOnline, func(context.Context, *Invocation) (json.RawMessage, error) {
		panic(logtest.Canary)
	})
	h.rt.register("test.oops", dockettype.PoolOnline, func(context.Context, *Invocation) (json.RawMessage, error) {
		return nil, errors.New(logtest.Canary)
	})
	outcomes := h.watchOutcomes()
	h.start()
	tests := []struct {
		workflow string
		code     dockettype.Code
		message  string
	}{
		{"test.refuse", dockettype.CodeInvalidInput, secret},
		{"test.boom", dockettype.CodeWorkerPanic, "the workflow panicked"},
		{"test.oops", dockettype.CodeWorkflowError, "the workflow returned an unexpected error"},
	}
	for _, tc := range tests {
		res, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: tc.workflow, Workflow: tc.workflow, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		// The service's long poll returns when the completer notifies it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := h.svc.Wait(ctx, alice, res.Task.ID, MaxWait)
		cancel()
		if err != nil || got.State != dockettype.StateFailed {
			t.Fatalf("%s: %+v %v, want failed", tc.workflow, got, err)
		}
		if got.Error == nil || got.Error.Code != tc.code || got.Error.Message != tc.message {
			t.Errorf("%s: error = %+v, want code %s and message %q", tc.workflow, got.Error, tc.code, tc.message)
		}
		// The failure is logged once, by code and IDs. The long poll can
		// see the committed state before the completer logs it: wait for
		// the completer to be done with the outcome.
		awaitOutcome(t, outcomes, res.Task.ID, outcomeApplied)
		var found int
		for _, line := range strings.Split(h.logs.String(), "\n") {
			if !strings.Contains(line, `"msg":"task failed"`) || !strings.Contains(line, res.Task.ID) {
				continue
			}
			found++
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			if rec["code"] != string(tc.code) || rec["tenant"] != "acme" || rec["trace_id"] != res.Task.TraceID || rec["task_id"] != res.Task.ID {
				t.Errorf("%s: log line %s, want code, tenant, trace and task", tc.workflow, line)
			}
		}
		if found != 1 {
			t.Errorf("%s: %d \"task failed\" log lines, want 1:\n%s", tc.workflow, found, h.logs)
		}
	}
	// logtest fails the test if any line carries the canary.
}

// A workflow may fail with any code (demo.fail takes it from the task's
// input): the task keeps it for its tenant, but the log line names only a
// code of the closed set, workflow_error for any other.
func TestFailureCodeOutsideTheSetIsLoggedAsWorkflowError(t *testing.T) {
	h := newHarness(t)
	chosen := dockettype.Code("tenant_chosen_code") // a valid workflow code, not one of the set
	h.rt.register("test.custom", dockettype.PoolOnline, func(context.Context, *Invocation) (json.RawMessage, error) {
		return nil, &dockettype.Failure{Code: chosen, Message: "failed as asked"}
	})
	outcomes := h.watchOutcomes()
	h.start()
	res, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "custom", Workflow: "test.custom", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	got, err := h.svc.Wait(ctx, alice, res.Task.ID, MaxWait)
	cancel()
	if err != nil || got.State != dockettype.StateFailed || got.Error == nil || got.Error.Code != chosen {
		t.Fatalf("task = %+v %v, want failed with code %s", got, err, chosen)
	}
	awaitOutcome(t, outcomes, res.Task.ID, outcomeApplied)
	var found int
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if !strings.Contains(line, `"msg":"task failed"`) || !strings.Contains(line, res.Task.ID) {
			continue
		}
		found++
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["code"] != string(dockettype.CodeWorkflowError) || strings.Contains(line, string(chosen)) {
			t.Errorf("log line %s, want code %s", line, dockettype.CodeWorkflowError)
		}
	}
	if found != 1 {
		t.Errorf("%d \"task failed\" log lines, want 1:\n%s", found, h.logs)
	}
	if strings.Contains(h.logs.String(), string(chosen)) {
		t.Errorf("the workflow's own code reached the log:\n%s", h.logs)
	}
}

func TestCleanMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 150) // 300 bytes
	tests := []struct{ in, want string }{
		{"  input needs a \"text\" string\n", `input needs a "text" string`},
		{"tab\there\x00nul", "tab here nul"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{long, strings.Repeat("é", 100)},
		{"", ""},
	}
	for _, tc := range tests {
		if got := cleanMessage(tc.in); got != tc.want {
			t.Errorf("cleanMessage(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A result over MaxResultBytes is not stored: the task fails at once with
// result_too_large (a retry would make the same result) and says how
// large it was. A result at the limit is stored whole.
func TestResultOverTheLimitFailsTheTask(t *testing.T) {
	const limit = 64
	h := newHarness(t, func(_ *harness, c *Config) { c.MaxResultBytes = limit })
	h.rt.register("test.sized", dockettype.PoolOnline, func(_ context.Context, inv *Invocation) (json.RawMessage, error) {
		var n int
		if err := json.Unmarshal(inv.Input, &n); err != nil {
			return nil, err
		}
		return json.Marshal(strings.Repeat("x", n-2)) // n bytes with its quotes
	})
	h.start()
	big, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "big", Workflow: "test.sized", Input: json.RawMessage("65"), MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	fits, err := h.svc.Submit(context.Background(), alice, &SubmitRequest{IdempotencyKey: "fits", Workflow: "test.sized", Input: json.RawMessage("64"), MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	got := h.waitTerminal(alice, big.Task.ID, dockettype.StateFailed)
	want := "the result of 65 bytes is over the 64-byte limit"
	if got.Error == nil || got.Error.Code != dockettype.CodeResultTooLarge || got.Error.Message != want {
		t.Errorf("error = %+v, want %s %q", got.Error, dockettype.CodeResultTooLarge, want)
	}
	if got.Attempt != 1 || got.Result != nil {
		t.Errorf("attempt %d, result %q: want one attempt and no result", got.Attempt, got.Result)
	}
	ok := h.waitTerminal(alice, fits.Task.ID, dockettype.StateSucceeded)
	if len(ok.Result) != limit {
		t.Errorf("result at the limit stored as %d bytes, want %d", len(ok.Result), limit)
	}
}
