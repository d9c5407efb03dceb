// Package logtest gives tests a JSON slog.Logger whose every line is checked,
// when the test ends, for things Docket must never log: payload canaries and
// database or SQL error text (R8); and for a key given twice in one line
// (two components naming themselves, say), which log search cannot read.
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

// Check fails t for each log line that holds a forbidden fragment or a key
// twice.
func Check(t testing.TB, logs string) {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		for _, f := range forbidden {
			if strings.Contains(line, f) {
				t.Errorf("log line leaks %q: %s", f, line)
			}
		}
		if key := duplicateKey(line); key != "" {
			t.Errorf("log line has the key %q twice: %s", key, line)
		}
	}
}

// duplicateKey returns a key that one JSON object of line (the record or a
// group in it) holds twice, or "".
func duplicateKey(line string) string {
	if !strings.HasPrefix(line, "{") {
		return ""
	}
	dec := json.NewDecoder(strings.NewReader(line))
	if _, err := dec.Token(); err != nil {
		return ""
	}
	return duplicateKeyInObject(dec)
}

// duplicateKeyInObject reads the rest of an object whose "{" was read.
func duplicateKeyInObject(dec *json.Decoder) string {
	seen := map[string]bool{}
	found := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return found
		}
		key, _ := tok.(string)
		if seen[key] && found == "" {
			found = key
		}
		seen[key] = true
		if dup := skipValue(dec); dup != "" && found == "" {
			found = dup
		}
	}
	_, _ = dec.Token() // "}"
	return found
}

// skipValue reads one value, checking the objects in it.
func skipValue(dec *json.Decoder) string {
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	switch tok {
	case json.Delim('{'):
		return duplicateKeyInObject(dec)
	case json.Delim('['):
		found := ""
		for dec.More() {
			if dup := skipValue(dec); dup != "" && found == "" {
				found = dup
			}
		}
		_, _ = dec.Token() // "]"
		return found
	}
	return ""
}
