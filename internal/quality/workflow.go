package quality

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/workflow"
)

// WorkflowName is the name the quality workflow is registered under.
const WorkflowName = "quality.evaluate"

// EvidenceKind is the kind of the evidence item written for each rule.
const EvidenceKind = "quality.rule"

// ruleEvidence is the body of one EvidenceKind item.
type ruleEvidence struct {
	RuleID        string   `json:"rule_id"`
	Kind          string   `json:"kind"`
	Passed        bool     `json:"passed"`
	Score         *float64 `json:"score,omitempty"`
	Reason        string   `json:"reason"`
	ConfigVersion string   `json:"config_version"`
}

// evaluateResult is the task result of the quality workflow.
type evaluateResult struct {
	Verdict       string `json:"verdict"`
	Passed        int    `json:"passed"`
	Failed        int    `json:"failed"`
	ConfigVersion string `json:"config_version"`
	RuleSetHash   string `json:"rule_set_hash"`
}

// Register registers the quality workflow on the offline pool. The
// workflow takes {"text": "…", "reference": "…"} (reference optional),
// judges it with the rule set version pinned on the task at admission,
// records one evidence item per rule, and returns
// {"verdict","passed","failed","config_version","rule_set_hash"}.
func Register(reg *workflow.Registry, p Provider) error {
	if p == nil {
		return errors.New("quality: nil provider")
	}
	return reg.Register(WorkflowName, workflow.Definition{
		Pool: dockettype.PoolOffline,
		Run:  evaluateWorkflow(p),
	})
}

func evaluateWorkflow(p Provider) workflow.Func {
	return func(ctx context.Context, b *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		in, err := decodeInput(input)
		if err != nil {
			// The error says what is missing without quoting the input.
			return nil, workflow.Fail(dockettype.CodeInvalidInput, err.Error(), false)
		}

		// The version pinned at admission, never the provider's current
		// one: a task must be judged by the rules it was admitted under.
		version := b.ConfigVersion()
		rs, err := p.Load(ctx, version)
		switch {
		case errors.Is(err, ErrUnknownVersion):
			return nil, workflow.Fail(dockettype.CodeWorkflowError, "the rule set version pinned on the task is not published", false)
		case errors.Is(err, ErrCorruptRuleSet):
			return nil, workflow.Fail(dockettype.CodeWorkflowError, "the rule set version pinned on the task cannot be read", false)
		case err != nil:
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, fmt.Errorf("load rule set: %w", err) // retryable: the store may recover
		}

		report := Evaluate(rs, in)
		items := make([]dockettype.EvidenceItem, 0, len(report.Items))
		for _, r := range report.Items {
			body, err := json.Marshal(ruleEvidence{
				RuleID:        r.RuleID,
				Kind:          r.Kind,
				Passed:        r.Passed,
				Score:         r.Score,
				Reason:        r.Reason,
				ConfigVersion: version,
			})
			if err != nil {
				return nil, fmt.Errorf("encode evidence: %w", err)
			}
			items = append(items, dockettype.EvidenceItem{Kind: EvidenceKind, Body: body})
		}

		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// One call, so the evidence of an attempt is written together,
		// fenced by one lease check.
		if err := b.RecordEvidence(ctx, items...); err != nil {
			return nil, fmt.Errorf("record evidence: %w", err)
		}
		return json.Marshal(evaluateResult{
			Verdict:       report.Verdict,
			Passed:        report.Passed,
			Failed:        report.Failed,
			ConfigVersion: version,
			RuleSetHash:   rs.Hash(),
		})
	}
}

// Why decodeInput refused an input: a task's error.message, so each names
// what is wrong or missing and none quotes the input (not even a field
// name it sent).
var (
	errInputNotObject    = errors.New(`input must be a JSON object: {"text": "…", "reference"?: "…"}`)
	errInputUnknownField = errors.New(`input takes only "text" and "reference"`)
	errInputNeedsText    = errors.New(`input needs a "text" string`)
	errInputBadReference = errors.New(`input "reference" must be a string when given`)
)

// decodeInput reads the workflow input strictly: an object with a string
// "text" and an optional string "reference", nothing else. Its errors are
// the messages above.
func decodeInput(data []byte) (Input, error) {
	var in Input
	f, err := objectFields(data)
	if err != nil {
		return in, errInputNotObject
	}
	if err := f.only("text", "reference"); err != nil {
		return in, errInputUnknownField
	}
	text, ok, err := get[string](f, "text", "a string")
	if err != nil || !ok {
		return in, errInputNeedsText
	}
	in.Text = text
	ref, ok, err := get[string](f, "reference", "a string")
	if err != nil {
		return in, errInputBadReference
	}
	if ok {
		in.Reference = &ref
	}
	return in, nil
}
