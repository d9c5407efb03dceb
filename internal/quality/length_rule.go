package quality

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// lengthRule passes when the text's length in characters (runes, not
// bytes, so that non-Latin text is not penalised) lies within bounds.
type lengthRule struct {
	min    int
	max    int
	hasMax bool
}

func buildLength(f fields) (checker, error) {
	const want = "a non-negative integer"
	lo, hasMin, err := get[int](f, "min", want)
	if err != nil {
		return nil, err
	}
	hi, hasMax, err := get[int](f, "max", want)
	if err != nil {
		return nil, err
	}
	switch {
	case !hasMin && !hasMax:
		return nil, errors.New("at least one of min and max is required")
	case lo < 0:
		return nil, fmt.Errorf("min: must be %s", want)
	case hi < 0:
		return nil, fmt.Errorf("max: must be %s", want)
	case hasMin && hasMax && lo > hi:
		return nil, fmt.Errorf("min %d is greater than max %d", lo, hi)
	}
	return &lengthRule{min: lo, max: hi, hasMax: hasMax}, nil
}

func (r *lengthRule) check(in Input) outcome {
	n := utf8.RuneCountInString(in.Text)
	switch {
	case n < r.min:
		return outcome{reason: fmt.Sprintf("length %d is below min %d", n, r.min)}
	case r.hasMax && n > r.max:
		return outcome{reason: fmt.Sprintf("length %d is above max %d", n, r.max)}
	}
	return outcome{passed: true, reason: fmt.Sprintf("length %d is within bounds", n)}
}
