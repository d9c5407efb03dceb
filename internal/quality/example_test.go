package quality_test

import (
	"fmt"

	"github.com/docket-dev/docket/internal/quality"
)

func ExampleEvaluate() {
	rs, err := quality.Parse([]byte(`{
		"name": "support-replies",
		"rules": [
			{"id": "len", "kind": "length", "min": 10, "max": 500},
			{"id": "greets", "kind": "required_terms", "terms": ["hello"]},
			{"id": "no-passwords", "kind": "forbidden_pattern", "pattern": "(?i)password\\s*[:=]"},
			{"id": "on-topic", "kind": "reference_overlap", "min_score": 0.5}
		]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	reference := "hello, your order has shipped"
	rep := quality.Evaluate(rs, quality.Input{
		Text:      "Hello! Your order shipped today.",
		Reference: &reference,
	})
	fmt.Println(rep.Verdict, rep.Passed, rep.Failed)
	for _, r := range rep.Items {
		fmt.Printf("%s %v: %s\n", r.RuleID, r.Passed, r.Reason)
	}
	// Output:
	// pass 4 0
	// len true: length 32 is within bounds
	// greets true: all 1 terms present
	// no-passwords true: forbidden pattern not found
	// on-topic true: overlap 0.80 is at least 0.50
}

func ExampleParse() {
	_, err := quality.Parse([]byte(`{
		"name": "broken",
		"rules": [
			{"id": "len", "kind": "length", "min": 50, "max": 10}
		]
	}`))
	fmt.Println(err)
	// Output:
	// rule 1 ("len"): min 50 is greater than max 10
}

func ExampleHash() {
	a, _ := quality.Hash([]byte(`{"name": "n", "rules": [{"id": "j", "kind": "valid_json"}]}`))
	b, _ := quality.Hash([]byte("{\n  \"rules\": [{\"kind\": \"valid_json\", \"id\": \"j\"}],\n  \"name\": \"n\"\n}"))
	fmt.Println(a == b)
	// Output:
	// true
}
