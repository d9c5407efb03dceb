package logtest

import "testing"

func TestDuplicateKey(t *testing.T) {
	for _, tc := range []struct {
		line, want string
	}{
		{`{"msg":"m","component":"queue","code":"internal"}`, ""},
		{`{"msg":"m","component":"queue","component":"recovery"}`, "component"},
		{`{"msg":"m","g":{"a":1,"a":2}}`, "a"},
		{`{"msg":"m","list":[{"a":1},{"a":2}]}`, ""},
		{`not json`, ""},
		{``, ""},
	} {
		if got := duplicateKey(tc.line); got != tc.want {
			t.Errorf("duplicateKey(%s) = %q, want %q", tc.line, got, tc.want)
		}
	}
}
