package quality

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// referenceOverlapRule scores how many words the text shares with the
// input's reference, as the F1 score (Dice coefficient) of their sets of
// lowercase word tokens: 1 when both use the same words, 0 when they share
// none. It is a cheap, deterministic signal, not a semantic judgement.
type referenceOverlapRule struct {
	minScore float64
}

func buildReferenceOverlap(f fields) (checker, error) {
	const want = "a number from 0 to 1"
	minScore, ok, err := get[float64](f, "min_score", want)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("min_score: required")
	}
	if minScore < 0 || minScore > 1 {
		return nil, fmt.Errorf("min_score: must be %s", want)
	}
	return &referenceOverlapRule{minScore: minScore}, nil
}

func (r *referenceOverlapRule) check(in Input) outcome {
	if in.Reference == nil {
		return outcome{reason: "no reference given"}
	}
	score := overlap(tokens(in.Text), tokens(*in.Reference))
	if score < r.minScore {
		return outcome{score: &score, reason: fmt.Sprintf("overlap %.2f is below %.2f", score, r.minScore)}
	}
	return outcome{passed: true, score: &score, reason: fmt.Sprintf("overlap %.2f is at least %.2f", score, r.minScore)}
}

// tokens returns the set of lowercase words (runs of letters and digits)
// in s.
func tokens(s string) map[string]struct{} {
	set := make(map[string]struct{})
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
	for _, w := range words {
		set[w] = struct{}{}
	}
	return set
}

// overlap is 2|a∩b| / (|a|+|b|). Two texts without words are identical as
// far as this measure can tell, so they score 1.
func overlap(a, b map[string]struct{}) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	common := 0
	for w := range a {
		if _, ok := b[w]; ok {
			common++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}
