package quality

// Verdicts of a Report.
const (
	VerdictPass = "pass"
	VerdictFail = "fail"
)

// Input is what a rule set judges: the text, and an optional reference
// text that reference_overlap rules compare it with.
type Input struct {
	Text      string
	Reference *string
}

// Report is the outcome of evaluating one input against one rule set.
// Verdict is "pass" when every rule passed.
type Report struct {
	Verdict string       `json:"verdict"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Items   []RuleResult `json:"items"`
}

// RuleResult is the outcome of one rule. Score is set by rules that grade
// rather than only pass or fail. Reason is short and never quotes the
// input, so results can be stored and shown without leaking payloads.
type RuleResult struct {
	RuleID string   `json:"rule_id"`
	Kind   string   `json:"kind"`
	Passed bool     `json:"passed"`
	Score  *float64 `json:"score,omitempty"`
	Reason string   `json:"reason"`
}

// Evaluate runs every rule of rs on in, in file order. It is pure and safe
// for concurrent use.
func Evaluate(rs *RuleSet, in Input) Report {
	rep := Report{Items: make([]RuleResult, 0, len(rs.rules))}
	for _, r := range rs.rules {
		o := r.check.check(in)
		rep.Items = append(rep.Items, RuleResult{
			RuleID: r.ID,
			Kind:   r.Kind,
			Passed: o.passed,
			Score:  o.score,
			Reason: o.reason,
		})
		if o.passed {
			rep.Passed++
		} else {
			rep.Failed++
		}
	}
	rep.Verdict = VerdictPass
	if rep.Failed > 0 {
		rep.Verdict = VerdictFail
	}
	return rep
}
