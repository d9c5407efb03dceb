package quality

import "encoding/json"

// validJSONRule passes when the text is one valid JSON value.
type validJSONRule struct{}

func buildValidJSON(fields) (checker, error) { return validJSONRule{}, nil }

func (validJSONRule) check(in Input) outcome {
	// The reason leaves out the syntax error: its text quotes the offending
	// character of the input.
	if !json.Valid([]byte(in.Text)) {
		return outcome{reason: "not valid JSON"}
	}
	return outcome{passed: true, reason: "valid JSON"}
}
