package httpapi

import "testing"

func TestParseTraceparent(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	tests := []struct {
		name   string
		values []string
		want   string
		ok     bool
	}{
		{"valid", []string{"00-" + id + "-00f067aa0ba902b7-01"}, id, true},
		{"unsampled", []string{"00-" + id + "-00f067aa0ba902b7-00"}, id, true},
		{"absent", nil, "", false},
		{"twice", []string{"00-" + id + "-00f067aa0ba902b7-01", "00-" + id + "-00f067aa0ba902b7-01"}, "", false},
		{"zero trace", []string{"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, "", false},
		{"zero parent", []string{"00-" + id + "-0000000000000000-01"}, "", false},
		{"upper case", []string{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}, "", false},
		{"version 01", []string{"01-" + id + "-00f067aa0ba902b7-01"}, "", false},
		{"trailing data", []string{"00-" + id + "-00f067aa0ba902b7-01-x"}, "", false},
		{"bad separator", []string{"00-" + id + "_00f067aa0ba902b7-01"}, "", false},
		{"non-hex flags", []string{"00-" + id + "-00f067aa0ba902b7-0g"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseTraceparent(tt.values)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("parseTraceparent = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	tp := formatTraceparent(id, true)
	if got, ok := parseTraceparent([]string{tp}); !ok || got != id {
		t.Fatalf("formatTraceparent = %q does not parse back", tp)
	}
}

func TestBearerKey(t *testing.T) {
	tests := []struct {
		values []string
		want   string
		ok     bool
	}{
		{[]string{"Bearer dk_x"}, "dk_x", true},
		{[]string{"bearer   dk_x "}, "dk_x", true},
		{[]string{"Basic dk_x"}, "", false},
		{[]string{"Bearer"}, "", false},
		{[]string{"Bearer "}, "", false},
		{[]string{"Bearer a", "Bearer b"}, "", false},
		{nil, "", false},
	}
	for _, tt := range tests {
		got, ok := bearerKey(tt.values)
		if got != tt.want || ok != tt.ok {
			t.Errorf("bearerKey(%q) = %q, %v; want %q, %v", tt.values, got, ok, tt.want, tt.ok)
		}
	}
}
