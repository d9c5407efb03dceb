package quality

import (
	"fmt"
	"strings"
	"testing"
)

// ruleSet wraps rule objects in a minimal rule set document.
func ruleSet(rules ...string) []byte {
	return []byte(`{"name": "test", "rules": [` + strings.Join(rules, ",") + `]}`)
}

func mustParseT(t *testing.T, data []byte) *RuleSet {
	t.Helper()
	rs, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return rs
}

func TestParseAcceptsEveryKind(t *testing.T) {
	t.Parallel()
	rs := mustParseT(t, []byte(`{
		"name": "all-kinds",
		"description": "one rule of each kind",
		"rules": [
			{"id": "len", "kind": "length", "min": 1, "max": 10},
			{"id": "terms", "kind": "required_terms", "terms": ["a"], "case_sensitive": true},
			{"id": "no-secrets", "kind": "forbidden_pattern", "pattern": "secret"},
			{"id": "json", "kind": "valid_json"},
			{"id": "shape", "kind": "json_schema", "schema": {"type": "object"}},
			{"id": "ref", "kind": "reference_overlap", "min_score": 0.5}
		]
	}`))
	if got, want := rs.Name(), "all-kinds"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	if got, want := rs.Description(), "one rule of each kind"; got != want {
		t.Errorf("Description() = %q, want %q", got, want)
	}
	want := []Rule{
		{"len", KindLength}, {"terms", KindRequiredTerms}, {"no-secrets", KindForbiddenPattern},
		{"json", KindValidJSON}, {"shape", KindJSONSchema}, {"ref", KindReferenceOverlap},
	}
	got := rs.Rules()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Rules() = %v, want %v", got, want)
	}
	if !strings.HasPrefix(rs.Hash(), "sha256:") || len(rs.Hash()) != len("sha256:")+64 {
		t.Errorf("Hash() = %q, want sha256:<64 hex>", rs.Hash())
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	t.Parallel()
	tooMany := make([]string, MaxRules+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`{"id": "r%d", "kind": "valid_json"}`, i)
	}
	huge := append(ruleSet(`{"id": "j", "kind": "valid_json"}`), make([]byte, MaxRuleSetBytes)...)

	tests := []struct {
		name string
		doc  []byte
		want []string // substrings of the error
	}{
		{"not JSON", []byte(`{"name":`), []string{"rule set: invalid JSON"}},
		{"trailing data", []byte(`{"name": "x", "rules": []} {}`), []string{"rule set: invalid JSON"}},
		{"not an object", []byte(`[1]`), []string{"rule set: must be a JSON object"}},
		{"null", []byte(`null`), []string{"rule set: must be a JSON object"}},
		{"too large", huge, []string{"at most 1048576 allowed"}},
		{"unknown top-level field", []byte(`{"name": "x", "rulez": [], "rules": []}`), []string{`rule set: unknown field "rulez"`}},
		{"field case must match", []byte(`{"Name": "x", "rules": []}`), []string{`unknown field "Name"`}},
		{"missing name", []byte(`{"rules": [{"id": "j", "kind": "valid_json"}]}`), []string{"name: required"}},
		{"blank name", []byte(`{"name": " ", "rules": [{"id": "j", "kind": "valid_json"}]}`), []string{"name: required"}},
		{"name not a string", []byte(`{"name": 3, "rules": []}`), []string{"name: must be a string"}},
		{"no rules", ruleSet(), []string{"rules: at least one rule is required"}},
		{"rules missing", []byte(`{"name": "x"}`), []string{"rules: at least one rule is required"}},
		{"rules not a list", []byte(`{"name": "x", "rules": {}}`), []string{"rules: must be a list of rules"}},
		{"too many rules", ruleSet(tooMany...), []string{"rules: 201 rules, at most 200 allowed"}},
		{"rule not an object", ruleSet(`"len"`), []string{"rule 1: must be a JSON object"}},
		{"missing id", ruleSet(`{"kind": "valid_json"}`), []string{"rule 1: id: required"}},
		{"bad id", ruleSet(`{"id": "Bad ID", "kind": "valid_json"}`), []string{`rule 1: id "Bad ID": must match`}},
		{"id too long", ruleSet(`{"id": "` + strings.Repeat("a", 65) + `", "kind": "valid_json"}`), []string{"rule 1: id", "must match"}},
		{"duplicate id", ruleSet(`{"id": "len", "kind": "valid_json"}`, `{"id": "len", "kind": "valid_json"}`), []string{`rule 2: duplicate id "len"`}},
		{"missing kind", ruleSet(`{"id": "x"}`), []string{`rule 1 ("x"): kind: required`}},
		{"unknown kind", ruleSet(`{"id": "x", "kind": "vibes"}`), []string{`rule 1 ("x"): kind: unknown kind "vibes"`, "length"}},
		{"unknown rule field", ruleSet(`{"id": "x", "kind": "valid_json", "strict": true}`), []string{`rule 1 ("x"): unknown field "strict" for kind "valid_json"`}},
		{"field of another kind", ruleSet(`{"id": "x", "kind": "length", "min": 1, "pattern": "a"}`), []string{`rule 1 ("x"): unknown field "pattern" for kind "length"`}},

		{"length without bounds", ruleSet(`{"id": "len", "kind": "length"}`), []string{`rule 1 ("len"): at least one of min and max is required`}},
		{"length min above max", ruleSet(`{"id": "len", "kind": "length", "min": 50, "max": 10}`), []string{`rule 1 ("len"): min 50 is greater than max 10`}},
		{"length negative", ruleSet(`{"id": "len", "kind": "length", "min": -1}`), []string{`rule 1 ("len"): min: must be a non-negative integer`}},
		{"length fraction", ruleSet(`{"id": "len", "kind": "length", "max": 1.5}`), []string{`rule 1 ("len"): max: must be a non-negative integer`}},
		{"length string", ruleSet(`{"id": "len", "kind": "length", "max": "10"}`), []string{`max: must be a non-negative integer`}},
		{"length null", ruleSet(`{"id": "len", "kind": "length", "min": null}`), []string{`min: must be a non-negative integer`}},

		{"terms missing", ruleSet(`{"id": "t", "kind": "required_terms"}`), []string{`rule 1 ("t"): terms: at least one term is required`}},
		{"terms empty", ruleSet(`{"id": "t", "kind": "required_terms", "terms": []}`), []string{`terms: at least one term is required`}},
		{"term empty", ruleSet(`{"id": "t", "kind": "required_terms", "terms": ["a", ""]}`), []string{`rule 1 ("t"): terms: term 2 is empty`}},
		{"terms not strings", ruleSet(`{"id": "t", "kind": "required_terms", "terms": [1]}`), []string{`terms: must be a list of strings`}},
		{"case_sensitive not bool", ruleSet(`{"id": "t", "kind": "required_terms", "terms": ["a"], "case_sensitive": "yes"}`), []string{`case_sensitive: must be true or false`}},

		{"pattern missing", ruleSet(`{"id": "p", "kind": "forbidden_pattern"}`), []string{`rule 1 ("p"): pattern: required`}},
		{"pattern bad", ruleSet(`{"id": "j", "kind": "valid_json"}`, `{"id": "k", "kind": "valid_json"}`, `{"id": "no-secrets", "kind": "forbidden_pattern", "pattern": "("}`), []string{`rule 3 ("no-secrets"): pattern: error parsing regexp: missing closing )`}},
		{"pattern backreference", ruleSet(`{"id": "p", "kind": "forbidden_pattern", "pattern": "(a)\\1"}`), []string{`rule 1 ("p"): pattern: error parsing regexp`}},

		{"schema missing", ruleSet(`{"id": "s", "kind": "json_schema"}`), []string{`rule 1 ("s"): schema: required`}},
		{"schema not object", ruleSet(`{"id": "s", "kind": "json_schema", "schema": true}`), []string{`rule 1 ("s"): schema: must be a JSON object`}},
		{"schema invalid", ruleSet(`{"id": "s", "kind": "json_schema", "schema": {"type": "banana"}}`), []string{`rule 1 ("s"): schema:`}},
		{"schema bad pattern", ruleSet(`{"id": "s", "kind": "json_schema", "schema": {"pattern": "("}}`), []string{`rule 1 ("s"): schema:`}},
		{"schema file ref", ruleSet(`{"id": "s", "kind": "json_schema", "schema": {"$ref": "file:///etc/passwd"}}`), []string{`rule 1 ("s"): schema:`, "external references are not allowed"}},
		{"schema too deep", ruleSet(`{"id": "s", "kind": "json_schema", "schema": ` + deepSchema(MaxSchemaDepth+1) + `}`), []string{`rule 1 ("s"): schema: nests deeper than 64 levels`}},
		{"schema too large", ruleSet(`{"id": "s", "kind": "json_schema", "schema": ` + wideSchema(MaxSchemaNodes/4+1) + `}`), []string{`rule 1 ("s"): schema: has more than 10000 JSON values`}},
		{"schema http ref", ruleSet(`{"id": "s", "kind": "json_schema", "schema": {"$ref": "https://example.com/s.json"}}`), []string{"external references are not allowed"}},

		{"min_score missing", ruleSet(`{"id": "o", "kind": "reference_overlap"}`), []string{`rule 1 ("o"): min_score: required`}},
		{"min_score above 1", ruleSet(`{"id": "o", "kind": "reference_overlap", "min_score": 1.5}`), []string{`rule 1 ("o"): min_score: must be a number from 0 to 1`}},
		{"min_score negative", ruleSet(`{"id": "o", "kind": "reference_overlap", "min_score": -0.1}`), []string{`min_score: must be a number from 0 to 1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rs, err := Parse(tt.doc)
			if err == nil {
				t.Fatalf("Parse succeeded (%d rules), want error containing %q", len(rs.Rules()), tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse error = %q, want it to contain %q", err, w)
				}
			}
			if _, hashErr := Hash(tt.doc); hashErr == nil {
				t.Errorf("Hash succeeded on a rule set Parse refuses")
			}
		})
	}
}

func TestParseAtLimits(t *testing.T) {
	t.Parallel()
	rules := make([]string, MaxRules)
	for i := range rules {
		rules[i] = fmt.Sprintf(`{"id": "r%d", "kind": "valid_json"}`, i)
	}
	if rs := mustParseT(t, ruleSet(rules...)); len(rs.Rules()) != MaxRules {
		t.Errorf("got %d rules, want %d", len(rs.Rules()), MaxRules)
	}
	mustParseT(t, ruleSet(`{"id": "deep", "kind": "json_schema", "schema": `+deepSchema(MaxSchemaDepth)+`}`))
	mustParseT(t, ruleSet(`{"id": "wide", "kind": "json_schema", "schema": `+wideSchema(MaxSchemaNodes/4-1)+`}`))
	id := strings.Repeat("a", 64)
	mustParseT(t, ruleSet(`{"id": "`+id+`", "kind": "valid_json"}`))
	mustParseT(t, ruleSet(`{"id": "0.a_b-c", "kind": "valid_json"}`))
}

// deepSchema returns a schema whose objects nest depth levels deep.
func deepSchema(depth int) string {
	return strings.Repeat(`{"items":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// wideSchema returns a schema of 4n+3 JSON values and member names: an
// object with "properties" and n properties of one type each.
func wideSchema(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d": {"type": "string"}`, i)
	}
	return `{"properties": {` + strings.Join(props, ", ") + `}}`
}
