package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/docket-dev/docket/internal/store/engine"
)

// dialect is SQLite's SQL where the backends differ (engine.Dialect).
var dialect = &engine.Dialect{
	// SQLite has no LATERAL: a correlated subquery per tenant.
	OldestReady: `SELECT min((SELECT created_at FROM task_queue q
			WHERE q.queue = tq.queue AND q.tenant = tq.tenant AND q.state = 'queued' AND q.run_after IS NULL
			ORDER BY priority DESC, id LIMIT 1))
		FROM tenant_queues tq WHERE (tq.queue = $1 OR tq.queue LIKE $2) AND tq.queued > 0`,
	Fires: "paused = 0",
	IDsOf: "SELECT value FROM json_each($1)",
	// The database runs in the process: its clock is the process's.
	Now: "SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
	// Times are kept in milliseconds since the epoch.
	AtMillis: "at",
	// The one write transaction at a time numbers versions in order.
	LockRuleSets: "",
	UpsertWorkers: `INSERT INTO workers (key_id, id, tenant, all_tenants, workflows, slots, leases, sdk, last_seen_at)
		SELECT x.value->>'key_id', x.value->>'id', x.value->>'tenant', x.value->>'all_tenants', x.value->>'workflows',
			x.value->>'slots', x.value->>'leases', x.value->>'sdk', x.value->>'last_seen_at'
		FROM json_each($1) x WHERE true
		ON CONFLICT (key_id, id) DO UPDATE SET tenant = excluded.tenant, all_tenants = excluded.all_tenants,
			workflows = excluded.workflows, slots = excluded.slots, leases = excluded.leases, sdk = excluded.sdk,
			last_seen_at = max(last_seen_at, excluded.last_seen_at)`,
}

// Dialect returns SQLite's SQL where the backends differ.
func (s *Backend) Dialect() *engine.Dialect { return dialect }

// Read runs fn on a connection of this handle's read pool, waiting for one
// at most for the first part of ctx's time (engine.WaitContext): a wait
// that ends so while every connection is in use is store.ErrBusy
// (engine.Busy), not an outage.
func (s *Backend) Read(ctx context.Context, op string, fn func(q engine.Querier) error) error {
	waitCtx, cancel := engine.WaitContext(ctx)
	conn, err := s.r.Conn(waitCtx)
	cancel()
	if err != nil {
		st := s.r.Stats()
		return interpretError(op, engine.Busy(waitCtx, err, st.InUse >= st.MaxOpenConnections))
	}
	defer conn.Close()
	return interpretError(op, cutShort(ctx, fn(querier{ctx: ctx, c: conn})))
}

// Update runs fn in an immediate write transaction behind the write gate.
func (s *Backend) Update(ctx context.Context, op string, fn func(q engine.Querier) error) error {
	return s.write(ctx, op, func(tx *wtx) error { return fn(querier{ctx: ctx, c: tx}) })
}

// querier is a read connection or a write transaction as the engine uses
// it. Times go in as the tables keep them: milliseconds since the epoch.
type querier struct {
	ctx context.Context
	c   interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	}
}

func (q querier) Query(query string, args ...any) (engine.Rows, error) {
	rows, err := q.c.QueryContext(q.ctx, query, msArgs(args)...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (q querier) Exec(query string, args ...any) (int64, error) {
	res, err := q.c.ExecContext(q.ctx, query, msArgs(args)...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// msArgs converts the times among args to milliseconds since the epoch.
func msArgs(args []any) []any {
	for i, a := range args {
		if t, ok := a.(time.Time); ok {
			args[i] = ms(t)
		}
	}
	return args
}

// sqlRows are database/sql's rows as the engine reads them.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }
