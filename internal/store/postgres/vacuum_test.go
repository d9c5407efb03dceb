package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// The store vacuums the live table when the queue's vacuum scheduler asks
// and enough of it is dead, without waiting for autovacuum's naptime: under
// load that is what keeps task_queue a few hundred pages instead of tens of
// thousands. Opening the store starts nothing.
func TestStoreVacuumsTheLiveTable(t *testing.T) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	b, err := postgres.OpenBackend(t.Context(), url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	params := &store.VacuumParams{MinDead: 5000, Quiet: time.Hour}
	if did, err := b.Vacuum(t.Context(), params); err != nil || did {
		t.Fatalf("Vacuum of a table with no dead row = %v, %v; want false, nil", did, err)
	}

	// 6,000 rows queued and deleted, as 6,000 finished tasks leave them.
	// The connection closes at once, so its statistics reach the server.
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SET search_path = " + pgx.Identifier{schema}.Sanitize(),
		`INSERT INTO task_queue (id, tenant, queue, priority, state, max_attempts, deadline_at, created_at)
		 SELECT 't-' || i, 'tenant', 'online', 0, 'queued', 1, now() + interval '1 hour', now()
		 FROM generate_series(1, 6000) i`,
		`DELETE FROM task_queue`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	conn, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })

	// The statistics reach the server within a second of the connection's
	// end; nothing signals it, so Vacuum is asked again until it sees them.
	ctx30, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		did, err := b.Vacuum(ctx30, params)
		if err != nil {
			t.Fatalf("the store did not vacuum task_queue after 6,000 rows died: %v", err)
		}
		if did {
			break
		}
		<-tick.C
	}
	// A vacuum within Quiet, by this node or another, makes the next wait.
	if did, err := b.Vacuum(ctx, params); err != nil || did {
		t.Errorf("Vacuum right after a vacuum = %v, %v; want false, nil", did, err)
	}
	// A VACUUM statement ran (autovacuum counts apart, in
	// autovacuum_count). How many dead rows it could remove is not the
	// store's to decide: an open transaction anywhere in the database (the
	// other packages' tests share it) keeps them, as it would autovacuum's.
	var vacuums int64
	err = conn.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = $1::regclass`,
		pgx.Identifier{schema, "task_queue"}.Sanitize()).Scan(&vacuums)
	if err != nil {
		t.Fatal(err)
	}
	if vacuums < 1 {
		t.Errorf("after the store's vacuum signal: vacuum_count %d, want at least 1", vacuums)
	}
	// Autovacuum keeps the pages too (a truncation would lock out claims).
	var options []string
	err = conn.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass`,
		pgx.Identifier{schema, "task_queue"}.Sanitize()).Scan(&options)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(options, "vacuum_truncate=false") {
		t.Errorf("task_queue options %v, want vacuum_truncate=false", options)
	}
}
