package logtest

import "testing"

func TestRepeatedKey(t *testing.T) {
	for line, want := range map[string]string{
		`{"msg":"x","component":"queue","component":"recovery"}`:        "component",
		`{"msg":"x","component":"recovery","nested":{"component":"y"}}`: "",
		`not json`: "",
		``:         "",
	} {
		got, ok := repeatedKey(line)
		if got != want || ok != (want != "") {
			t.Errorf("repeatedKey(%s) = %q, %v; want %q", line, got, ok, want)
		}
	}
}
