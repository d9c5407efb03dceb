// Package fuzzseed keeps the seed corpora of Docket's fuzz targets in Go
// code, where each nasty input can say why it is there, and in sync with
// the files `go test` reads them from (testdata/fuzz/<FuzzName>/), which
// run as ordinary test cases in every `go test`.
//
//	func TestSeedCorpora(t *testing.T) {
//		fuzzseed.Sync(t, "FuzzSubmit", []fuzzseed.Seed{{Name: "echo", Args: []any{[]byte(`{"workflow":"demo.echo"}`)}}})
//	}
//
// Sync fails when a file is missing or differs; `go test -run
// TestSeedCorpora -fuzzseed.update` rewrites them.
package fuzzseed

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var update = flag.Bool("fuzzseed.update", false, "rewrite the seed corpora under testdata/fuzz from the Go seeds")

// Seed is one input of a fuzz target: a file name and the target's
// arguments in order ([]byte, string, bool, int or uint16 values).
type Seed struct {
	Name string
	Args []any
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// Sync checks that testdata/fuzz/<target>/<name> holds each seed, or
// writes them with -fuzzseed.update. Other files there (inputs the fuzzer
// found) are left alone.
func Sync(t *testing.T, target string, seeds []Seed) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, s := range seeds {
		if !nameRE.MatchString(s.Name) || seen[s.Name] {
			t.Fatalf("%s: seed name %q is not a unique lowercase file name", target, s.Name)
		}
		seen[s.Name] = true
		want, err := Encode(s.Args...)
		if err != nil {
			t.Fatalf("%s/%s: %v", target, s.Name, err)
		}
		path := filepath.Join(dir, s.Name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is missing or out of date; run go test -run %s -fuzzseed.update", path, t.Name())
		}
	}
}

// Encode returns the corpus file of one input, in the format of
// `go test fuzz v1`.
func Encode(args ...any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case bool, int, uint16:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		default:
			return nil, fmt.Errorf("unsupported seed argument type %T", a)
		}
	}
	return b.Bytes(), nil
}
