package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/store/postgres"
)

// The throughput count reads the range of its window in the index of the
// terminal events, task_events_finished, and no other part of the
// history: whether the history holds 100,000 events or five times as many
// (DOCKET_SCALE_TEST=1: 3,000,000, half a minute of seeding), at the same
// rate of 10 events a second, the window's ten minutes holding 6,000 of
// them (2,000 terminal), it touches about the same pages. The planner
// walks the index alone (an index-only scan) or, when the window is a
// large share of the history, fetches the rows the index range names (a
// bitmap scan); never a sequential scan. The generic plan, which a
// prepared statement may come to use, reads the index too.
func TestThroughputReadsOnlyItsWindow(t *testing.T) {
	big := 500_000
	if os.Getenv("DOCKET_SCALE_TEST") != "" {
		big = 3_000_000
	}
	ctx := t.Context()
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	since := end.Add(-10 * time.Minute)
	args := []any{since.UnixMilli(), int64(10_000), since, end}
	var pages [2]int
	for i, n := range []int{100_000, big} {
		conn := migratedConn(t)
		// Every task's admission, claim and end, one event each, 100 ms
		// apart, the last at end.
		if _, err := conn.Exec(ctx, `INSERT INTO task_events (task_id, from_state, to_state, epoch, at)
			SELECT lpad((g / 3)::text, 12, '0'), '', CASE g % 3 WHEN 0 THEN 'queued' WHEN 1 THEN 'running'
				ELSE (ARRAY['succeeded', 'succeeded', 'succeeded', 'failed', 'timed_out', 'cancelled'])[1 + (g / 3) % 6] END,
				1, $1::timestamptz - ($2 - g) * interval '100 milliseconds'
			FROM generate_series(1, $2) g`, end, n); err != nil {
			t.Fatalf("seed: %v", err)
		}
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE task_events"); err != nil {
			t.Fatalf("vacuum: %v", err)
		}
		p := explain(t, conn, postgres.ThroughputSQL, args...)
		t.Logf("%d events: %d pages, %.2f ms\n%s", n, p.pages, p.ms, p.shape)
		wantWindowScan(t, fmt.Sprintf("the count over %d events", n), p.shape)
		wantWindowScan(t, fmt.Sprintf("the generic plan over %d events", n), genericShape(t, conn, postgres.ThroughputSQL, args...))
		pages[i] = p.pages
	}
	if pages[1] > 2*pages[0]+20 {
		t.Errorf("the count touched %d pages with %d events, %d with 100,000: it grows with the history", pages[1], big, pages[0])
	}
}

// wantWindowScan checks that every scan of a plan's shape reads
// task_events_finished, or the rows it names.
func wantWindowScan(t *testing.T, what, shape string) {
	t.Helper()
	used := false
	for _, line := range strings.Split(shape, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case !strings.Contains(line, "Scan"):
		case line == "Index Only Scan using task_events_finished", line == "Index Scan using task_events_finished",
			line == "Bitmap Index Scan using task_events_finished":
			used = true
		case line == "Bitmap Heap Scan on task_events":
		default:
			t.Errorf("%s reads more than the window of task_events_finished (%s):\n%s", what, line, shape)
		}
	}
	if !used {
		t.Errorf("%s does not read task_events_finished:\n%s", what, shape)
	}
}

// genericShape is the shape of q's generic plan (as a prepared statement
// may come to run it) in a transaction it rolls back.
func genericShape(t *testing.T, conn *pgx.Conn, q string, args ...any) string {
	t.Helper()
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	return planShape(t, tx, q, args...)
}
