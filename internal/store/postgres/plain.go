package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docket-dev/docket/internal/store/engine"
)

// dialect is PostgreSQL's SQL where the backends differ (engine.Dialect).
var dialect = &engine.Dialect{
	// Each tenant's first in line, read from the claim index.
	OldestReady: `SELECT min(f.created_at) FROM tenant_queues tq CROSS JOIN LATERAL (
			SELECT created_at FROM task_queue q
			WHERE q.queue = tq.queue AND q.tenant = tq.tenant AND q.state = 'queued' AND q.run_after IS NULL
			ORDER BY priority DESC, id LIMIT 1) f
		WHERE (tq.queue = $1 OR tq.queue LIKE $2) AND tq.queued > 0`,
	Now:      "SELECT clock_timestamp()",
	AtMillis: "floor(extract(epoch FROM at) * 1000)::bigint",
	Fires:    "NOT paused",
	IDsOf:    "SELECT jsonb_array_elements_text($1::text::jsonb)",
	// The table lock (which readers do not take) makes concurrent
	// publishers number their versions one after the other.
	LockRuleSets: "LOCK TABLE rule_sets IN SHARE ROW EXCLUSIVE MODE",
	UpsertWorkers: `INSERT INTO workers AS w (key_id, id, tenant, all_tenants, workflows, slots, leases, sdk, last_seen_at)
		SELECT x.key_id, x.id, x.tenant, x.all_tenants, x.workflows, x.slots, x.leases, x.sdk,
			'epoch'::timestamptz + x.last_seen_at * interval '1 millisecond'
		FROM jsonb_to_recordset($1::jsonb) AS x (key_id text, id text, tenant text, all_tenants bool, workflows text,
			slots int, leases int, sdk text, last_seen_at bigint)
		ON CONFLICT (key_id, id) DO UPDATE SET tenant = excluded.tenant, all_tenants = excluded.all_tenants,
			workflows = excluded.workflows, slots = excluded.slots, leases = excluded.leases, sdk = excluded.sdk,
			last_seen_at = GREATEST(w.last_seen_at, excluded.last_seen_at)`,
}

// Dialect returns PostgreSQL's SQL where the backends differ.
func (b *Backend) Dialect() *engine.Dialect { return dialect }

// acquire takes a connection of the pool, waiting at most for the first
// part of ctx's time (engine.WaitContext): a wait that ends so while every
// connection is in use is store.ErrBusy (engine.Busy), not an outage.
func (b *Backend) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	waitCtx, cancel := engine.WaitContext(ctx)
	defer cancel()
	conn, err := b.pool.Acquire(waitCtx)
	if err != nil {
		st := b.pool.Stat()
		return nil, engine.Busy(waitCtx, err, st.AcquiredConns() >= st.MaxConns())
	}
	return conn, nil
}

// Read runs fn on a connection of the pool.
func (b *Backend) Read(ctx context.Context, op string, fn func(q engine.Querier) error) error {
	conn, err := b.acquire(ctx)
	if err != nil {
		return interpretError(op, err)
	}
	defer conn.Release()
	return interpretError(op, fn(querier{ctx: ctx, c: conn}))
}

// Update runs fn in a READ COMMITTED transaction, retried like Write.
func (b *Backend) Update(ctx context.Context, op string, fn func(q engine.Querier) error) error {
	return b.write(ctx, op, func(tx pgx.Tx) error { return fn(querier{ctx: ctx, c: tx}) })
}

// querier is a pooled connection or a transaction as the engine uses it.
type querier struct {
	ctx context.Context
	c   interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}
}

func (q querier) Query(sql string, args ...any) (engine.Rows, error) {
	return q.c.Query(q.ctx, sql, args...)
}

func (q querier) Exec(sql string, args ...any) (int64, error) {
	tag, err := q.c.Exec(q.ctx, sql, args...)
	return tag.RowsAffected(), err
}
