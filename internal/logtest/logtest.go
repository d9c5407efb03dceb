// Package logtest gives tests a JSON slog.Logger whose every line is checked,
// when the test ends, for things Docket must never log: payload canaries and
// database or SQL error text, and for a key given twice in one line
// (two components naming themselves, say), which log search cannot read.
// Guard extends the check to the default logger of a whole test binary.
package logtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

// Canary is the marker tests put in payloads, results and evidence; it must
// never appear in a log line.
const Canary = "CANARY-7f3a9c"

// forbidden are fragments of SQL statements and database error messages
// (PostgreSQL's "ERROR: syntax error at or near ... (SQLSTATE 42601)",
// SQLite's "SQL logic error: no such column", ...).
var forbidden = []string{
	Canary,
	// "DELETE FROM", not "DELETE ": the access log names routes such as
	// "DELETE /v1/admin/workflows/{name}".
	"SELECT ", "INSERT ", "UPDATE ", "DELETE FROM", " WHERE ",
	"sqlite", "SQLITE", "SQLSTATE", "pgx", "syntax error", "at or near", "constraint",
	"SQL logic error", "no such table", "no such column", "violates", "database is locked",
	"connection refused", "duplicate key",
}

// Buffer is a concurrency-safe log sink.
type Buffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{} // closed and replaced by every Write
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.buf.Write(p)
}

// Await waits until everything logged so far satisfies ok, woken by each
// write, or until ctx ends; it reports whether ok was satisfied. A test
// that reads a line another goroutine logs after the result the test saw
// waits with it instead of sleeping.
func (b *Buffer) Await(ctx context.Context, ok func(logs string) bool) bool {
	for {
		b.mu.Lock()
		logs := b.buf.String()
		if b.written == nil {
			b.written = make(chan struct{})
		}
		written := b.written
		b.mu.Unlock()
		if ok(logs) {
			return true
		}
		select {
		case <-written:
		case <-ctx.Done():
			return false
		}
	}
}

// String returns everything logged so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Since returns what was logged after the first n bytes, and the length of
// everything logged so far: the n of the next call. A long-lived logger
// (one per fuzz target) checks each iteration's lines with it.
func (b *Buffer) Since(n int) (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := b.buf.Bytes()
	n = min(max(n, 0), len(all))
	return string(all[n:]), len(all)
}

// New returns a debug-level JSON logger and its buffer; at cleanup the test
// fails if any line holds a canary or SQL/database text.
func New(t testing.TB) (*slog.Logger, *Buffer) {
	t.Helper()
	b := &Buffer{}
	t.Cleanup(func() { Check(t, b.String()) })
	return newLogger(b), b
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Check fails t for each log line that holds a forbidden fragment or a key
// twice.
func Check(t testing.TB, logs string) {
	t.Helper()
	for _, p := range Problems(logs) {
		t.Error(p)
	}
}

// Problems returns one message for each log line that holds a forbidden
// fragment or (a JSON line) carries one key twice; none for clean logs.
func Problems(logs string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		// The database a refusal came from is a value of a closed set
		// (storefailure's "db" attribute), not database text.
		checked := strings.ReplaceAll(line, `"db":"sqlite"`, `"db":""`)
		for _, f := range forbidden {
			if strings.Contains(checked, f) {
				out = append(out, fmt.Sprintf("log line leaks %q: %s", f, line))
			}
		}
		if key := duplicateKey(line); key != "" {
			out = append(out, fmt.Sprintf("log line has the key %q twice: %s", key, line))
		}
	}
	return out
}

// TestingM is what Guard wraps: *testing.M, or goleak's TestingM.
type TestingM interface{ Run() int }

// Guard wraps a test binary's testing.M so that, while its tests run, the
// default slog logger, and with it the standard log package (net/http's
// server errors among others), writes to a checked buffer. A component a
// test builds without a logger falls back to slog.Default() and so is
// checked too. Run fails the binary (a non-zero code) when a line leaks.
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(logtest.Guard(m)) }
func Guard(m TestingM) TestingM { return guard{m: m, report: os.Stderr} }

type guard struct {
	m      TestingM
	report io.Writer // where the leaks are described
}

// Run runs the tests with the checked default logger. The default logger
// is not restored: the log package stays wired to it, and the binary exits
// after Run anyway.
func (g guard) Run() int {
	b := &Buffer{}
	slog.SetDefault(newLogger(b))
	code := g.m.Run()
	if problems := Problems(b.String()); len(problems) > 0 {
		fmt.Fprintf(g.report, "logtest: the default logger received lines Docket must never log:\n")
		for _, p := range problems {
			fmt.Fprintf(g.report, "\t%s\n", p)
		}
		if code == 0 {
			code = 1
		}
	}
	return code
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
