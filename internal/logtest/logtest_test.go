package logtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"testing"
)

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

// recorder is a testing.TB that records failures and cleanups instead of
// acting on them, so a test can watch the check fail.
type recorder struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper()           {}
func (r *recorder) Error(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestCheckFails proves that the check fails a test on each kind of leak a
// log line can carry: a payload canary, SQL text and database error
// messages of both backends.
func TestCheckFails(t *testing.T) {
	t.Parallel()
	leaks := map[string]string{
		"payload canary":      `{"msg":"submitted","input":"{\"note\":\"` + Canary + `\"}"}`,
		"PostgreSQL error":    `{"msg":"store failed","err":"ERROR: syntax error at or near \"FROM\" (SQLSTATE 42601)"}`,
		"bare SQLSTATE":       `{"msg":"store failed","err":"SQLSTATE 23505"}`,
		"syntax error":        `{"msg":"store failed","err":"syntax error at or near \"x\""}`,
		"SQL statement":       `{"msg":"query","sql":"SELECT id FROM tasks WHERE tenant = $1"}`,
		"SQLite error":        `{"msg":"store failed","err":"SQL logic error: no such column: tenantt (1)"}`,
		"unique violation":    `{"msg":"store failed","err":"duplicate key value violates unique constraint \"tasks_pkey\""}`,
		"text handler line":   `time=2024-01-01 level=WARN msg="claim failed" err="database is locked"`,
		"canary in a message": "plain text " + Canary,
	}
	for name, line := range leaks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			Check(rec, "{\"msg\":\"clean\"}\n"+line+"\n")
			if len(rec.errors) == 0 {
				t.Fatalf("Check passed a log that leaks: %s", line)
			}
			for _, e := range rec.errors {
				if !strings.Contains(e, line) {
					t.Errorf("the failure does not show the leaking line: %s", e)
				}
			}
		})
	}
}

func TestCheckPassesCleanLogs(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	Check(rec, `{"time":"2024-01-01T00:00:00Z","level":"INFO","msg":"http request","component":"http","method":"GET","route":"GET /v1/tasks/{id}","status":404,"code":"not_found","trace_id":"0af7651916cd43dd8448eb211c80319c"}
{"level":"WARN","msg":"store operation failed","component":"queue","code":"store_unavailable","op":"admit"}
`)
	if len(rec.errors) != 0 {
		t.Fatalf("Check failed clean logs: %v", rec.errors)
	}
}

// TestNewChecksAtCleanup proves that a logger from New fails its test when
// the test ends, whichever level the leak was logged at.
func TestNewChecksAtCleanup(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	logger, logs := New(rec)
	logger.DebugContext(t.Context(), "store failed", "err", errors.New("pq: SQLSTATE 40001"))
	logger.Info("ok", "code", "not_found")
	if len(rec.errors) != 0 {
		t.Fatal("checked before the test ended")
	}
	rec.runCleanups()
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "SQLSTATE") {
		t.Fatalf("errors at cleanup = %q, want one naming SQLSTATE; logs:\n%s", rec.errors, logs.String())
	}
}

func TestBufferSince(t *testing.T) {
	t.Parallel()
	var b Buffer
	fmt.Fprintln(&b, "one")
	got, n := b.Since(0)
	if got != "one\n" || n != 4 {
		t.Fatalf("Since(0) = %q, %d", got, n)
	}
	fmt.Fprintln(&b, "two")
	if got, n = b.Since(n); got != "two\n" || n != 8 {
		t.Fatalf("Since(4) = %q, %d", got, n)
	}
	if got, _ = b.Since(100); got != "" {
		t.Fatalf("Since past the end = %q", got)
	}
}

// fakeM is a test binary whose tests log through the default loggers.
type fakeM struct {
	run func()
}

func (m fakeM) Run() int { m.run(); return 0 }

// TestGuardFailsTheBinary proves that Guard fails a test binary whose
// components logged a leak through slog.Default() or the standard log
// package (where net/http writes its server errors). It changes the
// process's default loggers, so it runs alone.
func TestGuardFailsTheBinary(t *testing.T) {
	for name, leak := range map[string]func(){
		"slog default": func() {
			slog.Default().Warn("store failed", "err", "ERROR: syntax error at or near \"x\" (SQLSTATE 42601)")
		},
		"log package": func() { log.Printf("http: panic serving 127.0.0.1: %s", Canary) },
	} {
		var report bytes.Buffer
		code := guard{m: fakeM{run: leak}, report: &report}.Run()
		if code == 0 || !strings.Contains(report.String(), "log line leaks") {
			t.Errorf("%s: Guard returned %d, report %q; want a failure naming the line", name, code, report.String())
		}
	}
	var report bytes.Buffer
	clean := fakeM{run: func() { slog.Default().Info("http request", "code", "not_found") }}
	if code := (guard{m: clean, report: &report}).Run(); code != 0 || report.Len() != 0 {
		t.Errorf("clean binary: Guard returned %d, report %q", code, report.String())
	}
}

// Await returns once a write satisfies it, and gives up when its context
// ends.
func TestBufferAwait(t *testing.T) {
	var b Buffer
	go func() {
		for _, line := range []string{"one\n", "two\n", "three\n"} {
			b.Write([]byte(line))
		}
	}()
	if !b.Await(t.Context(), func(logs string) bool { return strings.Contains(logs, "three") }) {
		t.Fatal("Await gave up with the line written")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if b.Await(ctx, func(logs string) bool { return strings.Contains(logs, "four") }) {
		t.Fatal("Await returned true for a line never written")
	}
}
