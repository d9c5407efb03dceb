package quality

import (
	"strings"
	"testing"
)

func TestHashIgnoresFormatting(t *testing.T) {
	t.Parallel()
	compact := []byte(`{"name":"h","rules":[{"id":"len","kind":"length","min":1,"max":10},{"id":"s","kind":"json_schema","schema":{"type":"object","required":["a"]}}]}`)
	reformatted := []byte(`{
	  "rules": [
	    {"max": 10, "min": 1, "kind": "length", "id": "len"},
	    {
	      "kind": "json_schema",
	      "id": "s",
	      "schema": {"required": ["a"], "type": "object"}
	    }
	  ],
	  "name": "h"
	}
	`)
	a, err := Hash(compact)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Hash(reformatted)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("Hash differs under reformatting:\n%s\n%s", a, b)
	}
	if !strings.HasPrefix(a, "sha256:") {
		t.Errorf("Hash = %q, want sha256: prefix", a)
	}
	if got := mustParseT(t, reformatted).Hash(); got != a {
		t.Errorf("RuleSet.Hash() = %s, want %s", got, a)
	}
}

func TestHashChangesWithContent(t *testing.T) {
	t.Parallel()
	base := `{"name": "h", "rules": [{"id": "len", "kind": "length", "max": 10}]}`
	variants := []string{
		`{"name": "h", "rules": [{"id": "len", "kind": "length", "max": 11}]}`,
		`{"name": "h2", "rules": [{"id": "len", "kind": "length", "max": 10}]}`,
		`{"name": "h", "description": "d", "rules": [{"id": "len", "kind": "length", "max": 10}]}`,
		`{"name": "h", "rules": [{"id": "len2", "kind": "length", "max": 10}]}`,
		`{"name": "h", "rules": [{"id": "len", "kind": "length", "max": 10}, {"id": "j", "kind": "valid_json"}]}`,
		`{"name": "h", "rules": [{"id": "j", "kind": "valid_json"}, {"id": "len", "kind": "length", "max": 10}]}`,
	}
	want, err := Hash([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{want: base}
	for _, v := range variants {
		got, err := Hash([]byte(v))
		if err != nil {
			t.Fatalf("Hash(%s): %v", v, err)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("Hash(%s) = Hash(%s)", v, prev)
		}
		seen[got] = v
	}
}
