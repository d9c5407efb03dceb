package quality

import (
	"strings"
	"sync"
	"testing"
)

func TestRuleKinds(t *testing.T) {
	t.Parallel()
	ref := func(s string) *string { return &s }
	tests := []struct {
		name       string
		rule       string
		in         Input
		wantPass   bool
		wantReason string
		wantScore  *float64 // nil: no score expected
	}{
		{"length within", `{"kind": "length", "min": 3, "max": 5}`, Input{Text: "abcd"}, true, "length 4 is within bounds", nil},
		{"length at min", `{"kind": "length", "min": 3, "max": 5}`, Input{Text: "abc"}, true, "within bounds", nil},
		{"length at max", `{"kind": "length", "min": 3, "max": 5}`, Input{Text: "abcde"}, true, "within bounds", nil},
		{"length short", `{"kind": "length", "min": 3}`, Input{Text: "ab"}, false, "length 2 is below min 3", nil},
		{"length long", `{"kind": "length", "max": 5}`, Input{Text: "abcdef"}, false, "length 6 is above max 5", nil},
		{"length counts runes", `{"kind": "length", "max": 2}`, Input{Text: "日本"}, true, "length 2", nil},
		{"length empty", `{"kind": "length", "min": 1}`, Input{Text: ""}, false, "length 0 is below min 1", nil},

		{"terms all present", `{"kind": "required_terms", "terms": ["order", "refund"]}`, Input{Text: "Your ORDER has a Refund."}, true, "all 2 terms present", ptrTo(1.0)},
		{"terms one missing", `{"kind": "required_terms", "terms": ["order", "refund", "thanks"]}`, Input{Text: "your order"}, false, "2 of 3 terms missing", ptrTo(1.0 / 3)},
		{"terms case sensitive", `{"kind": "required_terms", "terms": ["Order"], "case_sensitive": true}`, Input{Text: "your order"}, false, "1 of 1 terms missing", ptrTo(0.0)},
		{"terms case sensitive match", `{"kind": "required_terms", "terms": ["Order"], "case_sensitive": true}`, Input{Text: "your Order"}, true, "all 1 terms present", ptrTo(1.0)},
		{"terms case insensitive term", `{"kind": "required_terms", "terms": ["ÉTÉ"]}`, Input{Text: "un été"}, true, "all 1 terms present", ptrTo(1.0)},

		{"pattern absent", `{"kind": "forbidden_pattern", "pattern": "AKIA[0-9A-Z]{16}"}`, Input{Text: "nothing to see"}, true, "forbidden pattern not found", nil},
		{"pattern present", `{"kind": "forbidden_pattern", "pattern": "AKIA[0-9A-Z]{16}"}`, Input{Text: "key AKIAABCDEFGHIJKLMNOP"}, false, "forbidden pattern matched", nil},

		{"json valid", `{"kind": "valid_json"}`, Input{Text: ` {"a": [1, 2]} `}, true, "valid JSON", nil},
		{"json scalar", `{"kind": "valid_json"}`, Input{Text: `42`}, true, "valid JSON", nil},
		{"json invalid", `{"kind": "valid_json"}`, Input{Text: `{"a": }`}, false, "not valid JSON", nil},
		{"json empty", `{"kind": "valid_json"}`, Input{Text: ``}, false, "not valid JSON", nil},

		{"schema valid", schemaRule, Input{Text: `{"title": "hi", "n": 2}`}, true, "matches schema", nil},
		{"schema not JSON", schemaRule, Input{Text: `title: hi`}, false, "not valid JSON", nil},
		{"schema wrong type", schemaRule, Input{Text: `{"title": 5}`}, false, "does not match schema at /properties/title/type", nil},
		{"schema missing property", schemaRule, Input{Text: `{"n": 1}`}, false, "does not match schema at /required", nil},
		{"schema extra property", schemaRule, Input{Text: `{"title": "x", "leak": 1}`}, false, "does not match schema at /additionalProperties", nil},
		{"schema minimum", schemaRule, Input{Text: `{"title": "x", "n": -1}`}, false, "does not match schema at /properties/n/minimum", nil},

		{"overlap identical", `{"kind": "reference_overlap", "min_score": 0.9}`, Input{Text: "The cat sat.", Reference: ref("the CAT sat")}, true, "overlap 1.00 is at least 0.90", ptrTo(1.0)},
		{"overlap partial", `{"kind": "reference_overlap", "min_score": 0.5}`, Input{Text: "a b c d", Reference: ref("a b x y")}, true, "overlap 0.50 is at least 0.50", ptrTo(0.5)},
		{"overlap low", `{"kind": "reference_overlap", "min_score": 0.6}`, Input{Text: "a b c d", Reference: ref("a b x y")}, false, "overlap 0.50 is below 0.60", ptrTo(0.5)},
		{"overlap disjoint", `{"kind": "reference_overlap", "min_score": 0.1}`, Input{Text: "alpha", Reference: ref("beta")}, false, "overlap 0.00", ptrTo(0.0)},
		{"overlap both empty", `{"kind": "reference_overlap", "min_score": 1}`, Input{Text: "...", Reference: ref("")}, true, "overlap 1.00", ptrTo(1.0)},
		{"overlap no reference", `{"kind": "reference_overlap", "min_score": 0}`, Input{Text: "anything"}, false, "no reference given", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rule := `{"id": "r",` + strings.TrimPrefix(tt.rule, "{")
			rs := mustParseT(t, ruleSet(rule))
			rep := Evaluate(rs, tt.in)
			if len(rep.Items) != 1 {
				t.Fatalf("got %d items, want 1", len(rep.Items))
			}
			got := rep.Items[0]
			if got.Passed != tt.wantPass {
				t.Errorf("Passed = %v, want %v (reason %q)", got.Passed, tt.wantPass, got.Reason)
			}
			if !strings.Contains(got.Reason, tt.wantReason) {
				t.Errorf("Reason = %q, want it to contain %q", got.Reason, tt.wantReason)
			}
			switch {
			case tt.wantScore == nil && got.Score != nil:
				t.Errorf("Score = %v, want none", *got.Score)
			case tt.wantScore != nil && got.Score == nil:
				t.Errorf("Score = none, want %v", *tt.wantScore)
			case tt.wantScore != nil && *got.Score != *tt.wantScore:
				t.Errorf("Score = %v, want %v", *got.Score, *tt.wantScore)
			}
			if got.RuleID != "r" {
				t.Errorf("RuleID = %q, want r", got.RuleID)
			}
			if tt.in.Text != "" && strings.Contains(got.Reason, tt.in.Text) {
				t.Errorf("Reason %q quotes the input", got.Reason)
			}
		})
	}
}

const schemaRule = `{"kind": "json_schema", "schema": {
	"type": "object",
	"required": ["title"],
	"additionalProperties": false,
	"properties": {"title": {"type": "string"}, "n": {"type": "integer", "minimum": 0}}
}}`

func ptrTo[T any](v T) *T { return &v }

func TestEvaluateReport(t *testing.T) {
	t.Parallel()
	rs := mustParseT(t, ruleSet(
		`{"id": "len", "kind": "length", "max": 100}`,
		`{"id": "no-secrets", "kind": "forbidden_pattern", "pattern": "(?i)password"}`,
		`{"id": "json", "kind": "valid_json"}`,
	))
	tests := []struct {
		text        string
		wantVerdict string
		wantPassed  int
		wantFailed  int
	}{
		{`{"ok": true}`, VerdictPass, 3, 0},
		{`my Password is hunter2`, VerdictFail, 1, 2},
		{strings.Repeat("x", 101), VerdictFail, 1, 2},
	}
	for _, tt := range tests {
		rep := Evaluate(rs, Input{Text: tt.text})
		if rep.Verdict != tt.wantVerdict || rep.Passed != tt.wantPassed || rep.Failed != tt.wantFailed {
			t.Errorf("Evaluate(%.20q) = %s %d/%d, want %s %d/%d", tt.text,
				rep.Verdict, rep.Passed, rep.Failed, tt.wantVerdict, tt.wantPassed, tt.wantFailed)
		}
		var ids []string
		for _, it := range rep.Items {
			ids = append(ids, it.RuleID)
		}
		if got, want := strings.Join(ids, ","), "len,no-secrets,json"; got != want {
			t.Errorf("item order = %s, want %s", got, want)
		}
	}
}

// One parsed rule set is shared by every worker; -race checks that
// evaluating it concurrently is safe.
func TestEvaluateConcurrently(t *testing.T) {
	t.Parallel()
	rs := mustParseT(t, ruleSet(
		`{"id": "len", "kind": "length", "max": 100}`,
		`{"id": "terms", "kind": "required_terms", "terms": ["title"]}`,
		`{"id": "pat", "kind": "forbidden_pattern", "pattern": "secret"}`,
		`{"id": "schema", `+strings.TrimPrefix(schemaRule, "{"),
		`{"id": "ref", "kind": "reference_overlap", "min_score": 0.5}`,
	))
	reference := "title hi"
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				text := `{"title": "hi"}`
				if i%2 == 1 {
					text = `{"title": 1}`
				}
				rep := Evaluate(rs, Input{Text: text, Reference: &reference})
				if len(rep.Items) != 5 {
					t.Errorf("got %d items, want 5", len(rep.Items))
					return
				}
			}
		})
	}
	wg.Wait()
}

// A text that fails a schema in several places always gets the same
// reason (the library reports the causes in map order).
func TestSchemaReasonIsDeterministic(t *testing.T) {
	t.Parallel()
	rs := mustParseT(t, ruleSet(`{"id": "s", "kind": "json_schema", "schema": {"properties": {
		"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}, "d": {"type": "string"},
		"e": {"type": "string"}, "f": {"type": "string"}, "g": {"type": "string"}, "h": {"type": "string"}}}}`))
	in := Input{Text: `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8}`}
	for range 50 {
		if got := Evaluate(rs, in).Items[0].Reason; got != "does not match schema at /properties/a/type" {
			t.Fatalf("reason = %q, want the least location, /properties/a/type", got)
		}
	}
}
