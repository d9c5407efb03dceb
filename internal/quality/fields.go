package quality

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// fields is one JSON object split into its members. Rule sets and workflow
// input are read through it rather than through struct decoding because
// encoding/json matches struct fields case-insensitively and cannot say
// which fields apply to which rule kind; here every key must match exactly.
type fields map[string]json.RawMessage

// objectFields decodes data as exactly one JSON object.
func objectFields(data []byte) (fields, error) {
	var f fields
	if err := json.Unmarshal(data, &f); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, errors.New("must be a JSON object")
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if f == nil { // the literal null
		return nil, errors.New("must be a JSON object")
	}
	return f, nil
}

// only refuses any key that is not in allowed. Keys are checked in sorted
// order so that the error for a given document is always the same.
func (f fields) only(allowed ...string) error {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("unknown field %q", k)
		}
	}
	return nil
}

// get decodes the member name into a T. It reports ok=false when the
// member is absent, and refuses null and values of the wrong type with an
// error that says what was wanted ("min: must be an integer").
func get[T any](f fields, name, want string) (v T, ok bool, err error) {
	raw, ok := f[name]
	if !ok {
		return v, false, nil
	}
	// Decoding null succeeds and leaves v unchanged, which would silently
	// turn "min": null into 0.
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return v, false, fmt.Errorf("%s: must be %s", name, want)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("%s: must be %s", name, want)
	}
	return v, true, nil
}
