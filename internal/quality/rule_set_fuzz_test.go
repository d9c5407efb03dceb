package quality

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/docket-dev/docket/internal/fuzzseed"
	"github.com/docket-dev/docket/internal/logtest"
)

// FuzzParseRuleSet parses any rule set file and evaluates any text with
// what it accepts. Parse never panics; Hash refuses what Parse refuses. An
// accepted set has 1 to MaxRules rules of known kinds with valid, unique
// ids, and its hash survives re-encoding (key order, spacing, escapes).
// Evaluation is deterministic, reports every rule with a reason, scores in
// [0, 1], and never quotes the evaluated text: a canary in the text never
// reaches a reason unless the rule set itself holds it.
func FuzzParseRuleSet(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		rs, err := Parse(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			if _, hashErr := Hash(data); hashErr == nil {
				t.Fatalf("Hash accepts a rule set Parse refuses (%v)", err)
			}
			return
		}
		if len(data) > MaxRuleSetBytes || !json.Valid(data) || strings.TrimSpace(rs.Name()) == "" {
			t.Fatalf("accepted %d bytes, valid JSON %v, name %q", len(data), json.Valid(data), rs.Name())
		}
		rules := rs.Rules()
		if len(rules) < 1 || len(rules) > MaxRules {
			t.Fatalf("%d rules", len(rules))
		}
		ids := map[string]bool{}
		for _, r := range rules {
			if ids[r.ID] || !ruleIDRE.MatchString(r.ID) || !slices.Contains(Kinds(), r.Kind) {
				t.Fatalf("rule %+v (ids so far %v)", r, ids)
			}
			ids[r.ID] = true
		}
		if h, err := Hash(data); err != nil || h != rs.Hash() {
			t.Fatalf("Hash = %q, %v; Parse's hash %q", h, err, rs.Hash())
		}
		if again := reencode(t, data); len(again) <= MaxRuleSetBytes {
			rs2, err := Parse(again)
			if err != nil || rs2.Hash() != rs.Hash() {
				t.Fatalf("re-encoded, the set parses to %v (hash %q), want hash %q:\n%s", err, hashOf(rs2), rs.Hash(), again)
			}
		}

		for _, in := range []Input{{Text: text, Reference: &text}, {Text: logtest.Canary + text}, {Text: text + logtest.Canary, Reference: &text}} {
			rep := Evaluate(rs, in)
			if !reflect.DeepEqual(rep, Evaluate(rs, in)) {
				t.Fatal("two evaluations of one input differ")
			}
			checkReport(t, rs, rep)
			if bytes.Contains(data, []byte(logtest.Canary)) {
				continue
			}
			for _, item := range rep.Items {
				if strings.Contains(item.Reason, logtest.Canary) {
					t.Fatalf("rule %q quotes the text: %q", item.RuleID, item.Reason)
				}
			}
		}
	})
}

// checkReport checks a report's shape: one item per rule in order, counts
// and verdict that agree with them, a reason each, scores in [0, 1].
func checkReport(t *testing.T, rs *RuleSet, rep Report) {
	t.Helper()
	rules := rs.Rules()
	if len(rep.Items) != len(rules) || rep.Passed+rep.Failed != len(rules) {
		t.Fatalf("%d items, %d passed, %d failed for %d rules", len(rep.Items), rep.Passed, rep.Failed, len(rules))
	}
	passed := 0
	for i, item := range rep.Items {
		if item.RuleID != rules[i].ID || item.Kind != rules[i].Kind || item.Reason == "" {
			t.Fatalf("item %d = %+v for rule %+v", i, item, rules[i])
		}
		if item.Score != nil && (math.IsNaN(*item.Score) || *item.Score < 0 || *item.Score > 1) {
			t.Fatalf("rule %q scored %v", item.RuleID, *item.Score)
		}
		if item.Passed {
			passed++
		}
	}
	if passed != rep.Passed || (rep.Verdict == VerdictPass) != (rep.Failed == 0) {
		t.Fatalf("report %+v", rep)
	}
}

// reencode decodes a JSON document and encodes it again, indented, with
// sorted keys and Go's escapes: the same content in another text.
func reencode(t *testing.T, data []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("an accepted set does not decode: %v", err)
	}
	out, err := json.MarshalIndent(doc, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func hashOf(rs *RuleSet) string {
	if rs == nil {
		return ""
	}
	return rs.Hash()
}

// ruleSetSeeds are (rule set file, text) pairs. The canary sits in the
// texts, never in the rule sets, so that a reason quoting the text fails.
var ruleSetSeeds = []fuzzseed.Seed{
	rsSeed("every-kind", `{"name":"all","description":"d","rules":[
		{"id":"len","kind":"length","min":1,"max":100},
		{"id":"terms","kind":"required_terms","terms":["order","refund"],"case_sensitive":false},
		{"id":"no-keys","kind":"forbidden_pattern","pattern":"AKIA[0-9A-Z]{16}"},
		{"id":"json","kind":"valid_json"},
		{"id":"shape","kind":"json_schema","schema":{"type":"object","required":["title"],"properties":{"title":{"type":"string","maxLength":3}}}},
		{"id":"ref","kind":"reference_overlap","min_score":0.5}]}`,
		`{"title":"`+logtest.Canary+`","order":"refund AKIAABCDEFGHIJKLMNOP"}`),
	rsSeed("schema-enum", `{"name":"s","rules":[{"id":"s","kind":"json_schema","schema":{"properties":{"a":{"enum":["x"]},"b":{"const":1},"c":{"pattern":"^z$"}},"additionalProperties":false}}]}`,
		`{"a":"`+logtest.Canary+`","b":"`+logtest.Canary+`","c":"`+logtest.Canary+`","`+logtest.Canary+`":1}`),
	rsSeed("schema-recursive-ref", `{"name":"s","rules":[{"id":"s","kind":"json_schema","schema":{"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"}}]}`,
		`[[[["`+logtest.Canary+`"]]]]`),
	rsSeed("schema-file-ref", `{"name":"s","rules":[{"id":"s","kind":"json_schema","schema":{"$ref":"file:///etc/passwd"}}]}`, "{}"),
	rsSeed("schema-http-ref", `{"name":"s","rules":[{"id":"s","kind":"json_schema","schema":{"$ref":"http://169.254.169.254/latest"}}]}`, "{}"),
	rsSeed("schema-id-ref", `{"name":"s","rules":[{"id":"s","kind":"json_schema","schema":{"$id":"file:///tmp/x","$ref":"y.json"}}]}`, "{}"),
	rsSeed("schema-deep", `{"name":"s","rules":[{"id":"s","kind":"json_schema","schema":`+strings.Repeat(`{"items":`, 3000)+`{}`+strings.Repeat(`}`, 3000)+`}]}`,
		strings.Repeat("[", 3000)+strings.Repeat("]", 3000)),
	rsSeed("schema-format", `{"name":"s","rules":[{"id":"s","kind":"json_schema","schema":{"format":"email","type":"string","minLength":1e400}}]}`, `"`+logtest.Canary+`"`),
	rsSeed("pattern-pathological", `{"name":"p","rules":[{"id":"p","kind":"forbidden_pattern","pattern":"(a+)+$"}]}`, strings.Repeat("a", 5000)+logtest.Canary),
	rsSeed("pattern-huge-repeat", `{"name":"p","rules":[{"id":"p","kind":"forbidden_pattern","pattern":"(a{1000}){1000}"}]}`, "a"),
	rsSeed("pattern-nul", `{"name":"p","rules":[{"id":"p","kind":"forbidden_pattern","pattern":"\u0000"}]}`, "a\x00"+logtest.Canary),
	rsSeed("pattern-invalid-utf8", "{\"name\":\"p\",\"rules\":[{\"id\":\"p\",\"kind\":\"forbidden_pattern\",\"pattern\":\"\xff\"}]}", "\xff"+logtest.Canary),
	rsSeed("terms-unicode", `{"name":"t","rules":[{"id":"t","kind":"required_terms","terms":["ÉTÉ","ǅ","ﬁ","İ"]}]}`, "été ǆ fi i̇ "+logtest.Canary),
	rsSeed("length-huge", `{"name":"l","rules":[{"id":"l","kind":"length","min":0,"max":99999999999999999999}]}`, logtest.Canary),
	rsSeed("length-int64", `{"name":"l","rules":[{"id":"l","kind":"length","min":9223372036854775807}]}`, logtest.Canary),
	rsSeed("length-exponent", `{"name":"l","rules":[{"id":"l","kind":"length","max":1e3}]}`, logtest.Canary),
	rsSeed("overlap-edges", `{"name":"o","rules":[{"id":"o","kind":"reference_overlap","min_score":0},{"id":"p","kind":"reference_overlap","min_score":1}]}`, ""),
	rsSeed("overlap-tiny", `{"name":"o","rules":[{"id":"o","kind":"reference_overlap","min_score":5e-324}]}`, logtest.Canary),
	rsSeed("duplicate-keys", `{"name":"a","name":"b","rules":[{"id":"x","id":"y","kind":"valid_json","kind":"length","max":3}]}`, logtest.Canary),
	rsSeed("duplicate-ids", `{"name":"d","rules":[{"id":"x","kind":"valid_json"},{"id":"x","kind":"valid_json"}]}`, "1"),
	rsSeed("lookalike-fields", `{"nаme":"cyrillic a","rules":[{"id":"x","kіnd":"valid_json"}]}`, "1"),
	rsSeed("lookalike-kind", `{"name":"k","rules":[{"id":"x","kind":"vаlid_json"}]}`, "1"),
	rsSeed("id-unicode", `{"name":"k","rules":[{"id":"ｘ","kind":"valid_json"}]}`, "1"),
	rsSeed("escaped-keys", `{"n\u0061me":"e","rules":[{"\u0069d":"x","kind":"valid_json"}]}`, "1"),
	rsSeed("nul-bytes", "{\"name\":\"n\x00\",\"rules\":[{\"id\":\"x\",\"kind\":\"valid_json\"}]}", "1"),
	rsSeed("invalid-utf8", "{\"name\":\"\xff\xfe\",\"rules\":[{\"id\":\"x\",\"kind\":\"valid_json\"}]}", "1"),
	rsSeed("escaped-nul-name", `{"name":"\u0000","description":"\ud800","rules":[{"id":"x","kind":"valid_json"}]}`, "1"),
	rsSeed("null-fields", `{"name":"n","description":null,"rules":[{"id":"x","kind":"length","min":null,"max":2}]}`, "1"),
	rsSeed("nested-rules", `{"name":"n","rules":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`}`, "1"),
	rsSeed("max-rules", `{"name":"m","rules":[`+manyRules(MaxRules)+`]}`, logtest.Canary),
	rsSeed("over-max-rules", `{"name":"m","rules":[`+manyRules(MaxRules+1)+`]}`, logtest.Canary),
	rsSeed("over-one-mib", `{"name":"big","description":"`+strings.Repeat("d", MaxRuleSetBytes)+`","rules":[{"id":"x","kind":"valid_json"}]}`, "1"),
	rsSeed("empty", ``, ""),
	rsSeed("not-object", `[{"id":"x","kind":"valid_json"}]`, "1"),
	rsSeed("trailing", `{"name":"t","rules":[{"id":"x","kind":"valid_json"}]} {}`, "1"),
}

func rsSeed(name, data, text string) fuzzseed.Seed {
	return fuzzseed.Seed{Name: name, Args: []any{[]byte(data), text}}
}

// manyRules returns n valid rules of cycling kinds.
func manyRules(n int) string {
	kinds := []string{`"kind":"valid_json"`, `"kind":"length","max":10`, `"kind":"required_terms","terms":["a"]`}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"id":"r%d",%s}`, i, kinds[i%len(kinds)])
	}
	return strings.Join(out, ",")
}

func TestRuleSetSeedCorpus(t *testing.T) {
	fuzzseed.Sync(t, "FuzzParseRuleSet", ruleSetSeeds)
}
