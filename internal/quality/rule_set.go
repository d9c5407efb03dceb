package quality

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Size guards: a rule set is loaded into every worker that evaluates it, so
// its size is bounded at publish time.
const (
	MaxRuleSetBytes = 1 << 20 // 1 MiB
	MaxRules        = 200
)

var ruleIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// RuleSet is a parsed, compiled rule set. It is immutable, so one value is
// shared by every task that pins its version, from any goroutine. Only
// Parse makes one.
type RuleSet struct {
	name        string
	description string
	rules       []rule
	hash        string
}

// Name returns the rule set's name.
func (rs *RuleSet) Name() string { return rs.name }

// Description returns the rule set's optional description.
func (rs *RuleSet) Description() string { return rs.description }

// Hash returns the content hash of the rule set, as Hash computes it.
func (rs *RuleSet) Hash() string { return rs.hash }

// Rules returns the rules in file order.
func (rs *RuleSet) Rules() []Rule {
	out := make([]Rule, len(rs.rules))
	for i, r := range rs.rules {
		out[i] = r.Rule
	}
	return out
}

// Parse reads a rule set file and compiles its rules. It is strict, because
// a typo in a published rule set would otherwise silently weaken every task
// pinned to it: unknown fields, fields that do not apply to a rule's kind,
// wrong types, duplicate ids, bad patterns and bad schemas are all refused,
// with an error that names the rule and the problem, such as
//
//	rule 3 ("no-secrets"): pattern: error parsing regexp: missing closing ): `(`
//
// The format:
//
//	{
//	  "name": "support-replies",           // required
//	  "description": "…",                  // optional
//	  "rules": [                           // 1 to MaxRules rules
//	    {"id": "len", "kind": "length", "min": 20, "max": 2000},
//	    {"id": "greets", "kind": "required_terms", "terms": ["hello"], "case_sensitive": false},
//	    {"id": "no-keys", "kind": "forbidden_pattern", "pattern": "AKIA[0-9A-Z]{16}"},
//	    {"id": "is-json", "kind": "valid_json"},
//	    {"id": "shape", "kind": "json_schema", "schema": {"type": "object"}},
//	    {"id": "on-topic", "kind": "reference_overlap", "min_score": 0.3}
//	  ]
//	}
//
// Rule ids match ^[a-z0-9][a-z0-9_.-]{0,63}$ and are unique within the set.
func Parse(data []byte) (*RuleSet, error) {
	if len(data) > MaxRuleSetBytes {
		return nil, fmt.Errorf("rule set is %d bytes, at most %d allowed", len(data), MaxRuleSetBytes)
	}
	top, err := objectFields(data)
	if err != nil {
		return nil, fmt.Errorf("rule set: %w", err)
	}
	if err := top.only("name", "description", "rules"); err != nil {
		return nil, fmt.Errorf("rule set: %w", err)
	}
	name, _, err := get[string](top, "name", "a string")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("name: required")
	}
	description, _, err := get[string](top, "description", "a string")
	if err != nil {
		return nil, err
	}
	raws, _, err := get[[]json.RawMessage](top, "rules", "a list of rules")
	if err != nil {
		return nil, err
	}
	switch {
	case len(raws) == 0:
		return nil, errors.New("rules: at least one rule is required")
	case len(raws) > MaxRules:
		return nil, fmt.Errorf("rules: %d rules, at most %d allowed", len(raws), MaxRules)
	}

	rs := &RuleSet{name: name, description: description, rules: make([]rule, 0, len(raws))}
	seen := make(map[string]bool, len(raws))
	for i, raw := range raws {
		r, err := parseRule(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ruleLabel(i, r.ID), err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("rule %d: duplicate id %q", i+1, r.ID)
		}
		seen[r.ID] = true
		rs.rules = append(rs.rules, r)
	}
	if rs.hash, err = contentHash(data); err != nil {
		return nil, fmt.Errorf("rule set: %w", err)
	}
	return rs, nil
}

// parseRule parses one rule. On error it still returns the rule's id when
// the id itself was valid, so the error can name the rule.
func parseRule(raw json.RawMessage) (rule, error) {
	var r rule
	f, err := objectFields(raw)
	if err != nil {
		return r, err
	}
	id, ok, err := get[string](f, "id", "a string")
	switch {
	case err != nil:
		return r, err
	case !ok:
		return r, errors.New("id: required")
	case !ruleIDRE.MatchString(id):
		return r, fmt.Errorf("id %q: must match %s", id, ruleIDRE)
	}
	r.ID = id

	kind, ok, err := get[string](f, "kind", "a string")
	if err != nil {
		return r, err
	}
	if !ok {
		return r, errors.New("kind: required")
	}
	spec, known := kinds[kind]
	if !known {
		return r, fmt.Errorf("kind: unknown kind %q (want one of %s)", kind, strings.Join(Kinds(), ", "))
	}
	r.Kind = kind
	if err := f.only(append([]string{"id", "kind"}, spec.fields...)...); err != nil {
		return r, fmt.Errorf("%w for kind %q", err, kind)
	}
	if r.check, err = spec.build(f); err != nil {
		return r, err
	}
	return r, nil
}

// ruleLabel names rule i (0-based) in errors: `rule 3 ("no-secrets")`, or
// `rule 3` when its id is not known yet.
func ruleLabel(i int, id string) string {
	if id == "" {
		return fmt.Sprintf("rule %d", i+1)
	}
	return fmt.Sprintf("rule %d (%q)", i+1, id)
}
