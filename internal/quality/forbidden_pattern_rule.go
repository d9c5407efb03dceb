package quality

import (
	"errors"
	"fmt"
	"regexp"
)

// forbiddenPatternRule passes when its pattern does not match the text.
// Patterns use Go's RE2 syntax, whose matching time is linear in the text,
// so a published pattern cannot stall a worker by backtracking.
type forbiddenPatternRule struct {
	re *regexp.Regexp
}

func buildForbiddenPattern(f fields) (checker, error) {
	pattern, ok, err := get[string](f, "pattern", "a string")
	if err != nil {
		return nil, err
	}
	if !ok || pattern == "" {
		return nil, errors.New("pattern: required")
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern: %w", err)
	}
	return &forbiddenPatternRule{re: re}, nil
}

func (r *forbiddenPatternRule) check(in Input) outcome {
	// The reason never includes the match: it would be the very secret the
	// rule exists to keep out of storage.
	if r.re.MatchString(in.Text) {
		return outcome{reason: "forbidden pattern matched"}
	}
	return outcome{passed: true, reason: "forbidden pattern not found"}
}
