package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/sqlite"
)

// The throughput count reads the range of its window in the index of the
// terminal events alone (a covering index: no row of task_events is read),
// whatever the history holds: here 60,000 events, the window's ten
// minutes 6,000 of them. (The seeding is slow under the race detector.)
func TestThroughputReadsOnlyItsWindow(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "docket.db")
	b, err := sqlite.OpenBackend(t.Context(), path, sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	q := engine.ThroughputSQL(b.Dialect())
	b.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	since := end.Add(-10 * time.Minute)
	for _, s := range []string{
		// Every task's admission, claim and end, 100 ms apart, the last at end.
		`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 60000)
		 INSERT INTO task_events (task_id, from_state, to_state, epoch, at)
		 SELECT printf('%012d', n / 3), '', CASE n % 3 WHEN 0 THEN 'queued' WHEN 1 THEN 'running'
			ELSE CASE (n / 3) % 3 WHEN 0 THEN 'failed' ELSE 'succeeded' END END,
			1, $1 - (60000 - n) * 100 FROM g`,
		`ANALYZE`,
	} {
		if _, err := db.ExecContext(context.Background(), s, end.UnixMilli()); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, since.UnixMilli(), int64(10_000), since.UnixMilli(), end.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan: %q", plan)
	if len(plan) == 0 || !strings.HasPrefix(plan[0], "SEARCH task_events USING COVERING INDEX task_events_finished (at>? AND at<?)") {
		t.Errorf("the count does not read the window from task_events_finished alone: %q", plan)
	}
}
