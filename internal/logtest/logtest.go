// Package logtest gives tests a JSON slog.Logger whose every line is checked,
// when the test ends, for things Docket must never log: payload canaries and
// database or SQL error text (R8).
package logtest

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Canary is the marker tests put in payloads, results and evidence; it must
// never appear in a log line.
const Canary = "CANARY-7f3a9c"

// forbidden are fragments of SQL statements and database error messages.
var forbidden = []string{
	Canary,
	"SELECT ", "INSERT ", "UPDATE ", "DELETE ", " WHERE ",
	"sqlite", "SQLITE", "SQLSTATE", "pgx", "syntax error", "constraint",
	"no such table", "database is locked", "connection refused", "duplicate key",
}

// Buffer is a concurrency-safe log sink.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything logged so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// New returns a debug-level JSON logger and its buffer; at cleanup the test
// fails if any line holds a canary or SQL/database text.
func New(t testing.TB) (*slog.Logger, *Buffer) {
	t.Helper()
	b := &Buffer{}
	t.Cleanup(func() { Check(t, b.String()) })
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// Check fails t for each log line that holds a forbidden fragment, and for
// each JSON line that carries one key twice (a logger built With the same
// key as its parent's).
func Check(t testing.TB, logs string) {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		for _, f := range forbidden {
			if strings.Contains(line, f) {
				t.Errorf("log line leaks %q: %s", f, line)
			}
		}
		if k, ok := repeatedKey(line); ok {
			t.Errorf("log line carries %q twice: %s", k, line)
		}
	}
}

// repeatedKey returns a top-level key that a JSON object line holds more
// than once. Lines that are not JSON objects are not checked.
func repeatedKey(line string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := tok.(string)
		if seen[key] {
			return key, true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}
