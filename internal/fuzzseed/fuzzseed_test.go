package fuzzseed

import "testing"

func TestEncode(t *testing.T) {
	got, err := Encode([]byte("a\x00\xff"), "b\"", true, uint16(5), 7)
	if err != nil {
		t.Fatal(err)
	}
	want := "go test fuzz v1\n[]byte(\"a\\x00\\xff\")\nstring(\"b\\\"\")\nbool(true)\nuint16(5)\nint(7)\n"
	if string(got) != want {
		t.Fatalf("Encode = %q, want %q", got, want)
	}
	if _, err := Encode(1.5); err == nil {
		t.Fatal("Encode accepted a float64")
	}
}
