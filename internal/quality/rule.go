package quality

import (
	"maps"
	"slices"
)

// Rule kinds. Each kind has its own fields in the rule file and its own
// file in this package.
const (
	KindLength           = "length"
	KindRequiredTerms    = "required_terms"
	KindForbiddenPattern = "forbidden_pattern"
	KindValidJSON        = "valid_json"
	KindJSONSchema       = "json_schema"
	KindReferenceOverlap = "reference_overlap"
)

// Rule describes one rule of a rule set.
type Rule struct {
	ID   string
	Kind string
}

// rule is a parsed rule: its identity and its compiled check.
type rule struct {
	Rule
	check checker
}

// checker is a compiled rule. Implementations are immutable after
// construction, so one parsed rule set can be evaluated from many workers at
// once.
type checker interface {
	check(in Input) outcome
}

// outcome is what one checker says about one input. The reason must never
// quote the input text.
type outcome struct {
	passed bool
	score  *float64
	reason string
}

// kindSpec says which fields a kind accepts (besides id and kind) and how
// to build its checker from them.
type kindSpec struct {
	fields []string
	build  func(f fields) (checker, error)
}

var kinds = map[string]kindSpec{
	KindLength:           {fields: []string{"min", "max"}, build: buildLength},
	KindRequiredTerms:    {fields: []string{"terms", "case_sensitive"}, build: buildRequiredTerms},
	KindForbiddenPattern: {fields: []string{"pattern"}, build: buildForbiddenPattern},
	KindValidJSON:        {build: buildValidJSON},
	KindJSONSchema:       {fields: []string{"schema"}, build: buildJSONSchema},
	KindReferenceOverlap: {fields: []string{"min_score"}, build: buildReferenceOverlap},
}

// Kinds returns the names of the supported rule kinds, sorted.
func Kinds() []string { return slices.Sorted(maps.Keys(kinds)) }
