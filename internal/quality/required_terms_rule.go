package quality

import (
	"errors"
	"fmt"
	"strings"
)

// requiredTermsRule passes when every term occurs in the text. Its reason
// counts the missing terms instead of naming them: terms are configuration,
// but a per-term report would let evidence reconstruct what the text says.
type requiredTermsRule struct {
	terms         []string // lowercased unless caseSensitive
	caseSensitive bool
}

func buildRequiredTerms(f fields) (checker, error) {
	terms, ok, err := get[[]string](f, "terms", "a list of strings")
	if err != nil {
		return nil, err
	}
	if !ok || len(terms) == 0 {
		return nil, errors.New("terms: at least one term is required")
	}
	for i, t := range terms {
		if t == "" {
			return nil, fmt.Errorf("terms: term %d is empty", i+1)
		}
	}
	cs, _, err := get[bool](f, "case_sensitive", "true or false")
	if err != nil {
		return nil, err
	}
	if !cs {
		for i, t := range terms {
			terms[i] = strings.ToLower(t)
		}
	}
	return &requiredTermsRule{terms: terms, caseSensitive: cs}, nil
}

func (r *requiredTermsRule) check(in Input) outcome {
	text := in.Text
	if !r.caseSensitive {
		text = strings.ToLower(text)
	}
	missing := 0
	for _, t := range r.terms {
		if !strings.Contains(text, t) {
			missing++
		}
	}
	score := float64(len(r.terms)-missing) / float64(len(r.terms))
	if missing > 0 {
		return outcome{score: &score, reason: fmt.Sprintf("%d of %d terms missing", missing, len(r.terms))}
	}
	return outcome{passed: true, score: &score, reason: fmt.Sprintf("all %d terms present", len(r.terms))}
}
