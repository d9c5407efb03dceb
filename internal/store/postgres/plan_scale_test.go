package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/store/postgres"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
)

// The claim, recovery and deadline statements touch about the same number
// of pages whether 10,000 or many more tasks are queued (R4), and the
// claim and recovery plans are the same: index range scans bounded by
// their LIMIT, primary-key lookups for the rest. (The deadline scan reads
// only overdue rows either way; when the planner expects few of them it
// may fetch them with a bitmap scan and sort them, rather than walk the
// index in order.)
// DOCKET_SCALE_TEST=1 compares 10,000 with 1,000,000 queued (a minute of
// seeding); the default compares 10,000 with 100,000.
func TestPlansDoNotGrowWithTheQueue(t *testing.T) {
	url := pgtest.URL(t)
	big := 100_000
	if os.Getenv("DOCKET_SCALE_TEST") != "" {
		big = 1_000_000
	}
	ctx := t.Context()
	var shapes [2]string
	var pages [2]map[string]int
	for i, n := range []int{10_000, big} {
		schema := pgtest.Schema(t, url)
		pgtest.Open(t, url, schema).Close() // creates and migrates the schema
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "SET search_path = "+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		seed(t, conn, n)
		plans := explainAll(t, conn)
		conn.Close(ctx)
		var sb strings.Builder
		pages[i] = map[string]int{}
		for _, name := range []string{"claim", "recovery", "deadline"} {
			p := plans[name]
			if name != "deadline" {
				fmt.Fprintf(&sb, "%s: %s\n", name, p.shape)
			}
			pages[i][name] = p.pages
			t.Logf("%d queued, %s: %d pages, %.2f ms\n%s", n, name, p.pages, p.ms, p.shape)
		}
		shapes[i] = sb.String()
	}
	if shapes[0] != shapes[1] {
		t.Errorf("plans differ between 10,000 and %d queued:\n%s\nvs\n%s", big, shapes[0], shapes[1])
	}
	for name, small := range pages[0] {
		if large := pages[1][name]; large > 2*small+20 {
			t.Errorf("%s touched %d pages with %d queued, %d with 10,000: it grows with the queue", name, large, big, small)
		}
	}
}

// seed writes n ready tasks of 10 tenants and 500 running tasks whose
// leases and deadlines have passed, with consistent counters, directly.
func seed(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO tasks (id, tenant, idempotency_key, author, workflow, pool, priority, max_attempts, deadline_at, created_at, trace_id, config_version, input)
		 SELECT lpad(g::text, 12, '0'), 'tenant-' || (g % 10), g::text, 'a', 'demo.echo', 'online', 0, 3,
			$1::timestamptz + interval '1 day', $1, 't', 'v', '{}' FROM generate_series(1, $2 + 500) g`, []any{base, n}},
		{`INSERT INTO task_queue (id, tenant, queue, priority, state, max_attempts, deadline_at, created_at)
		 SELECT id, tenant, pool, priority, 'queued', max_attempts, deadline_at, created_at FROM tasks`, nil},
		{`UPDATE task_queue SET state = 'running', attempt = 1, lease_epoch = 1, lease_owner = 'dead',
			lease_expires_at = $1::timestamptz - interval '1 minute', deadline_at = $1::timestamptz - interval '1 minute'
		 WHERE id > lpad($2::int::text, 12, '0')`, []any{base, n}},
		{`INSERT INTO tenant_queues (queue, tenant, queued, vtime)
		 SELECT 'online', tenant, count(*), 0 FROM task_queue WHERE state = 'queued' GROUP BY tenant`, nil},
		{`VACUUM ANALYZE task_queue`, nil},
		{`ANALYZE tasks`, nil},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
}

type plan struct {
	shape string // node types and the index each scans, outermost first
	pages int    // shared buffers hit and read
	ms    float64
}

func explainAll(t *testing.T, conn *pgx.Conn) map[string]plan {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := map[string]plan{}
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"claim":    {postgres.TakeSQL, []any{"online", "tenant-3", 64, "node", now.Add(time.Minute), now}},
		"recovery": {postgres.FindExpiredSQL, []any{now, 500}},
		"deadline": {postgres.FindOverdueSQL, []any{now, 500}},
	} {
		out[name] = explain(t, conn, q.sql, q.args...)
	}
	return out
}

// explain runs q under EXPLAIN ANALYZE in a transaction it rolls back.
func explain(t *testing.T, conn *pgx.Conn, q string, args ...any) plan {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var raw []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+q, args...).Scan(&raw); err != nil {
		t.Fatalf("explain: %v", err)
	}
	var doc []struct {
		Plan          node    `json:"Plan"`
		ExecutionTime float64 `json:"Execution Time"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	doc[0].Plan.describe(&sb, 0)
	return plan{shape: sb.String(), pages: doc[0].Plan.SharedHit + doc[0].Plan.SharedRead, ms: doc[0].ExecutionTime}
}

type node struct {
	Type       string `json:"Node Type"`
	Index      string `json:"Index Name"`
	Relation   string `json:"Relation Name"`
	SharedHit  int    `json:"Shared Hit Blocks"`
	SharedRead int    `json:"Shared Read Blocks"`
	Plans      []node `json:"Plans"`
}

func (n node) describe(sb *strings.Builder, depth int) {
	fmt.Fprintf(sb, "%s%s", strings.Repeat("  ", depth), n.Type)
	if n.Index != "" {
		fmt.Fprintf(sb, " using %s", n.Index)
	} else if n.Relation != "" {
		fmt.Fprintf(sb, " on %s", n.Relation)
	}
	sb.WriteString("\n")
	for _, c := range n.Plans {
		c.describe(sb, depth+1)
	}
}

// Between two vacuums of task_queue every claimed task leaves a dead entry
// in the claim index, and the statistics an autovacuum ANALYZE gathers then
// price the index walk above a sequential scan and a sort of the whole
// table. Seen under continuous load: one such plan held every claim for
// 5 s. The settings of the write transactions keep it on the index walk.
func TestClaimPlanSurvivesDeadEntries(t *testing.T) {
	ctx := t.Context()
	conn := migratedConn(t)
	// 200,000 tasks queued and 195,000 of them gone (claimed, finished),
	// with no vacuum since: 5,000 live rows behind their dead entries.
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`ALTER TABLE task_queue SET (autovacuum_enabled = false)`, nil},
		{`INSERT INTO tasks (id, tenant, idempotency_key, author, workflow, pool, priority, max_attempts, deadline_at, created_at, trace_id, config_version, input)
		 SELECT lpad(g::text, 12, '0'), 'tenant-0', g::text, 'a', 'demo.echo', 'online', 0, 3,
			$1::timestamptz + interval '1 day', $1, 't', 'v', '{}' FROM generate_series(1, 200000) g`, []any{base}},
		{`INSERT INTO task_queue (id, tenant, queue, priority, state, max_attempts, deadline_at, created_at)
		 SELECT id, tenant, pool, priority, 'queued', max_attempts, deadline_at, created_at FROM tasks`, nil},
		{`DELETE FROM task_queue WHERE id <= lpad('195000', 12, '0')`, nil},
		{`ANALYZE task_queue`, nil},
	} {
		if _, err := conn.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	for _, s := range postgres.WritePlanSettings {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	now := base.Add(time.Hour)
	shape := planShape(t, tx, postgres.TakeSQL, "online", "tenant-0", 2000, "node", now.Add(time.Minute), now)
	if !strings.Contains(shape, "Index Scan using task_queue_claim") || strings.Contains(shape, "Seq Scan") || strings.Contains(shape, "Sort") {
		t.Errorf("claim of 2,000 behind 195,000 dead entries does not walk the claim index:\n%s", shape)
	}
}

// The statements that find live rows by ID can use the primary key and no
// other index of task_queue. Seen under continuous load: just after an
// autovacuum, the statistics made a whole scan of the (tenant, id) index
// look cheaper than the primary key, and the finish, lock and claim
// statements walked every entry of it for 5 to 8 s. Here the primary key is
// dropped (in a transaction rolled back), so the planner takes whatever
// else can answer: the tenant index must not be among it.
func TestIDLookupsCannotUseTheTenantIndex(t *testing.T) {
	ctx := t.Context()
	conn := migratedConn(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	stmts := append([]string{"ALTER TABLE task_queue DROP CONSTRAINT task_queue_pkey"}, postgres.WritePlanSettings...)
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := []string{"a", "b"}
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"lock":  {postgres.LockLiveSQL, []any{ids}},
		"end":   {postgres.EndSQL, []any{ids, []int64{1, 1}, []string{"running", "running"}, []string{"succeeded", "succeeded"}, []bool{false, false}, []string{"", ""}, []string{"", ""}, [][]byte{nil, nil}, []bool{false, false}, []bool{false, false}, now}},
		"claim": {postgres.TakeSQL, []any{"online", "tenant-0", 64, "node", now.Add(time.Minute), now}},
	} {
		if shape := planShape(t, tx, q.sql, q.args...); strings.Contains(shape, "task_queue_tenant") {
			t.Errorf("%s finds rows by ID through the tenant index:\n%s", name, shape)
		}
	}
}

// migratedConn is a connection to a fresh, migrated schema, closed when
// the test ends.
func migratedConn(t *testing.T) *pgx.Conn {
	t.Helper()
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url)
	pgtest.Open(t, url, schema).Close()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), "SET search_path = "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// planShape is the shape (node types and indexes) of q's plan in tx.
func planShape(t *testing.T, tx pgx.Tx, q string, args ...any) string {
	t.Helper()
	var raw []byte
	if err := tx.QueryRow(t.Context(), "EXPLAIN (FORMAT JSON) "+q, args...).Scan(&raw); err != nil {
		t.Fatalf("explain: %v", err)
	}
	var doc []struct {
		Plan node `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	doc[0].Plan.describe(&sb, 0)
	return sb.String()
}

// A retry's revive finds the result rows it deletes from its list of
// (task, tenant) pairs: a primary-key probe per pair, then the rows by
// their tuple IDs, in its custom plan and its generic one. Filtering each
// row against the whole list (a parameter array is searched linearly: a
// million comparisons for a batch of a thousand) cost 10 ms a batch; a
// join with the list was planned, under a bulk retry's statistics, as a
// hash of every failed task of the tenant (230 ms a batch).
func TestReviveFindsItsRowsByTheList(t *testing.T) {
	ctx := t.Context()
	conn := migratedConn(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// 100,000 failed tasks of one tenant, as before a bulk retry.
	if _, err := conn.Exec(ctx, `INSERT INTO task_results (task_id, tenant, state, attempt, lease_epoch, finished_at)
		SELECT lpad(g::text, 12, '0'), 'tenant-0', 'failed', 1, 1, $1 FROM generate_series(1, 100000) g`, now); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE task_results"); err != nil {
		t.Fatal(err)
	}
	ids, tenants := make([]string, 1000), make([]string, 1000)
	for i := range ids {
		ids[i], tenants[i] = fmt.Sprintf("%012d", 5000+i), "tenant-0"
	}
	args := []any{ids, tenants, "online", now, now}
	for _, generic := range []bool{false, true} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		settings := postgres.WritePlanSettings
		if generic {
			settings = append(slices.Clone(settings), "SET LOCAL plan_cache_mode = force_generic_plan")
		}
		for _, s := range settings {
			if _, err := tx.Exec(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		shape := planShape(t, tx, postgres.ReviveSQL, args...)
		tx.Rollback(context.Background())
		if !strings.Contains(shape, "Tid Scan on task_results") || strings.Contains(shape, "Hash") ||
			strings.Contains(shape, "task_results_tenant_state") {
			t.Errorf("generic plan %v: the revive does not find its rows by the list's probes:\n%s", generic, shape)
		}
	}
}
