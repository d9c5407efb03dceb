package quality

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/binding"
	"github.com/docket-dev/docket/workflow"
)

// fakeSink records evidence like the queue's fenced writer.
type fakeSink struct {
	mu    sync.Mutex
	calls [][]dockettype.EvidenceItem
	err   error
}

var _ binding.EvidenceSink = (*fakeSink)(nil)

func (s *fakeSink) WriteEvidence(_ context.Context, items []dockettype.EvidenceItem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.calls = append(s.calls, items)
	return nil
}

// workflowFixture registers the workflow over a published provider that
// has v1 and v2, and returns its entry point.
func workflowFixture(t *testing.T) workflow.Func {
	t.Helper()
	src := &fakeSource{}
	src.publish(t, `{"name": "w", "rules": [
		{"id": "len", "kind": "length", "min": 5, "max": 200},
		{"id": "no-secrets", "kind": "forbidden_pattern", "pattern": "(?i)password"},
		{"id": "greets", "kind": "required_terms", "terms": ["hello"]}
	]}`)
	src.publish(t, rulesV2)
	reg := workflow.NewRegistry()
	if err := Register(reg, NewPublishedProvider(src)); err != nil {
		t.Fatalf("Register: %v", err)
	}
	def, ok := reg.Lookup(WorkflowName)
	if !ok {
		t.Fatalf("%s not registered", WorkflowName)
	}
	if def.Pool != dockettype.PoolOffline {
		t.Errorf("pool = %s, want offline", def.Pool)
	}
	return def.Run
}

func bindingFor(version string, sink binding.EvidenceSink) *workflow.Binding {
	return binding.New[*workflow.Binding](binding.Params{
		TaskID:        "task-1",
		Tenant:        "acme",
		Author:        "ann",
		Workflow:      WorkflowName,
		Pool:          dockettype.PoolOffline,
		Attempt:       1,
		LeaseEpoch:    1,
		ConfigVersion: version,
		Evidence:      sink,
	})
}

func TestWorkflowEndToEnd(t *testing.T) {
	t.Parallel()
	run := workflowFixture(t)
	tests := []struct {
		name        string
		input       string
		wantVerdict string
		wantPassed  int
		wantFailed  int
		wantFailing []string
	}{
		{"pass", `{"text": "Hello there, your order shipped."}`, VerdictPass, 3, 0, nil},
		{"fail", `{"text": "my password is swordfish", "reference": "ignored"}`, VerdictFail, 1, 2, []string{"no-secrets", "greets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sink := &fakeSink{}
			out, err := run(context.Background(), bindingFor("v1", sink), json.RawMessage(tt.input))
			if err != nil {
				t.Fatalf("run: %v", err)
			}

			var res map[string]any
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("result %s: %v", out, err)
			}
			wantHash, _ := Hash([]byte(`{"name": "w", "rules": [
				{"id": "len", "kind": "length", "min": 5, "max": 200},
				{"id": "no-secrets", "kind": "forbidden_pattern", "pattern": "(?i)password"},
				{"id": "greets", "kind": "required_terms", "terms": ["hello"]}]}`))
			want := map[string]any{
				"verdict":        tt.wantVerdict,
				"passed":         float64(tt.wantPassed),
				"failed":         float64(tt.wantFailed),
				"config_version": "v1",
				"rule_set_hash":  wantHash,
			}
			if len(res) != len(want) {
				t.Errorf("result has keys %v, want %v", res, want)
			}
			for k, v := range want {
				if res[k] != v {
					t.Errorf("result[%q] = %v, want %v", k, res[k], v)
				}
			}

			if len(sink.calls) != 1 {
				t.Fatalf("RecordEvidence called %d times, want once", len(sink.calls))
			}
			items := sink.calls[0]
			if len(items) != 3 {
				t.Fatalf("got %d evidence items, want one per rule (3)", len(items))
			}
			var failing []string
			for i, it := range items {
				if it.Kind != EvidenceKind {
					t.Errorf("item %d kind = %q, want %q", i, it.Kind, EvidenceKind)
				}
				var body struct {
					RuleID        string   `json:"rule_id"`
					Kind          string   `json:"kind"`
					Passed        *bool    `json:"passed"`
					Score         *float64 `json:"score"`
					Reason        string   `json:"reason"`
					ConfigVersion string   `json:"config_version"`
				}
				dec := json.NewDecoder(strings.NewReader(string(it.Body)))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&body); err != nil {
					t.Fatalf("item %d body %s: %v", i, it.Body, err)
				}
				if body.ConfigVersion != "v1" {
					t.Errorf("item %d config_version = %q, want v1", i, body.ConfigVersion)
				}
				if body.RuleID == "" || body.Kind == "" || body.Passed == nil || body.Reason == "" {
					t.Errorf("item %d body %s lacks a field", i, it.Body)
				}
				if body.Kind == KindRequiredTerms && body.Score == nil {
					t.Errorf("item %d: required_terms evidence lacks its score", i)
				}
				if body.Kind == KindLength && strings.Contains(string(it.Body), `"score"`) {
					t.Errorf("item %d: length evidence has a score: %s", i, it.Body)
				}
				if strings.Contains(string(it.Body), "swordfish") {
					t.Errorf("item %d quotes the input: %s", i, it.Body)
				}
				if !*body.Passed {
					failing = append(failing, body.RuleID)
				}
			}
			if strings.Join(failing, ",") != strings.Join(tt.wantFailing, ",") {
				t.Errorf("failing rules = %v, want %v", failing, tt.wantFailing)
			}
		})
	}
}

// The workflow judges by the version pinned on the binding, not by the
// newest one.
func TestWorkflowUsesPinnedVersion(t *testing.T) {
	t.Parallel()
	run := workflowFixture(t)
	for _, version := range []string{"v1", "v2"} {
		sink := &fakeSink{}
		out, err := run(context.Background(), bindingFor(version, sink), json.RawMessage(`{"text": "hello world"}`))
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		if !strings.Contains(string(out), `"config_version":"`+version+`"`) {
			t.Errorf("%s: result %s does not carry the pinned version", version, out)
		}
		wantItems := map[string]int{"v1": 3, "v2": 2}[version]
		if got := len(sink.calls[0]); got != wantItems {
			t.Errorf("%s: %d evidence items, want %d", version, got, wantItems)
		}
	}
}

// Refused input fails at once with invalid_input, and the message names
// what is wrong without quoting the input (not even a field name it sent).
func TestWorkflowRefusesBadInput(t *testing.T) {
	t.Parallel()
	run := workflowFixture(t)
	const (
		notObject = `input must be a JSON object: {"text": "…", "reference"?: "…"}`
		onlyKnown = `input takes only "text" and "reference"`
		needsText = `input needs a "text" string`
		badRef    = `input "reference" must be a string when given`
	)
	tests := []struct{ input, want string }{
		{``, notObject},
		{`not json`, notObject},
		{`null`, notObject},
		{`[]`, notObject},
		{`"text"`, notObject},
		{`{}`, needsText},
		{`{"text": null}`, needsText},
		{`{"text": 5}`, needsText},
		{`{"reference": "r"}`, needsText},
		{`{"text": "hi", "reference": 5}`, badRef},
		{`{"text": "hi", "extra_canary": true}`, onlyKnown},
		{`{"Text": "hi"}`, onlyKnown},
		{`{"text": "hi"} {"text": "again"}`, notObject},
	}
	for _, tc := range tests {
		sink := &fakeSink{}
		_, err := run(context.Background(), bindingFor("v1", sink), json.RawMessage(tc.input))
		var f *dockettype.Failure
		if !errors.As(err, &f) || f.Code != dockettype.CodeInvalidInput || f.Retryable {
			t.Errorf("input %q: error = %v, want non-retryable %s failure", tc.input, err, dockettype.CodeInvalidInput)
			continue
		}
		if f.Message != tc.want {
			t.Errorf("input %q: message = %q, want %q", tc.input, f.Message, tc.want)
		}
		if len(sink.calls) != 0 {
			t.Errorf("input %q: evidence written for refused input", tc.input)
		}
	}
}

func TestWorkflowUnknownVersion(t *testing.T) {
	t.Parallel()
	run := workflowFixture(t)
	for _, version := range []string{"v9", "", SeedVersion} {
		sink := &fakeSink{}
		_, err := run(context.Background(), bindingFor(version, sink), json.RawMessage(`{"text": "hello"}`))
		var f *dockettype.Failure
		if !errors.As(err, &f) || f.Code != dockettype.CodeWorkflowError || f.Retryable {
			t.Errorf("version %q: error = %v, want non-retryable %s failure", version, err, dockettype.CodeWorkflowError)
		}
		if len(sink.calls) != 0 {
			t.Errorf("version %q: evidence written", version)
		}
	}
}

func TestWorkflowStoreErrorIsRetryable(t *testing.T) {
	t.Parallel()
	errDown := errors.New("store down")
	reg := workflow.NewRegistry()
	if err := Register(reg, NewPublishedProvider(&fakeSource{err: errDown})); err != nil {
		t.Fatal(err)
	}
	def, _ := reg.Lookup(WorkflowName)
	_, err := def.Run(context.Background(), bindingFor("v1", &fakeSink{}), json.RawMessage(`{"text": "hello"}`))
	var f *dockettype.Failure
	if !errors.Is(err, errDown) || errors.As(err, &f) {
		t.Errorf("error = %v, want the store error (retryable workflow_error)", err)
	}
}

func TestWorkflowReturnsEvidenceError(t *testing.T) {
	t.Parallel()
	run := workflowFixture(t)
	errStale := errors.New("stale lease")
	_, err := run(context.Background(), bindingFor("v1", &fakeSink{err: errStale}), json.RawMessage(`{"text": "hello"}`))
	if !errors.Is(err, errStale) {
		t.Errorf("error = %v, want the RecordEvidence error", err)
	}
}

func TestWorkflowHonoursCancellation(t *testing.T) {
	t.Parallel()
	run := workflowFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sink := &fakeSink{}
	_, err := run(ctx, bindingFor("v1", sink), json.RawMessage(`{"text": "hello"}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if len(sink.calls) != 0 {
		t.Errorf("evidence written after cancellation")
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	reg := workflow.NewRegistry()
	if err := Register(reg, nil); err == nil {
		t.Errorf("Register with a nil provider succeeded")
	}
	if err := Register(reg, NewSeedProvider()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := Register(reg, NewSeedProvider()); err == nil {
		t.Errorf("second Register succeeded")
	}
}
