package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
)

// Options tunes the PostgreSQL store.
type Options struct {
	// MaxConns bounds the store's connection pool; default 8.
	MaxConns int32
	// Schema, when set, is created if missing and put first on every
	// connection's search_path, so that several Docket installations (or
	// test runs) can share one database.
	Schema string
	// AllowForeign installs Docket's tables in a schema that holds other
	// tables and no Docket migration record; without it such a schema is
	// refused (migration.ErrForeignDatabase).
	AllowForeign bool
}

// Open connects to the database at url, applies pending migrations and
// returns the store.
func Open(ctx context.Context, url string, opts Options) (*engine.Store, error) {
	return engine.Open(OpenBackend(ctx, url, opts))
}

// Backend is the PostgreSQL engine.Backend.
type Backend struct {
	cfg    *pgxpool.Config // the parsed configuration, copied by Fork
	pool   *pgxpool.Pool
	schema string // the installation's schema ("" for the search path's first)
	once   sync.Once
}

var _ engine.Backend = (*Backend)(nil)

// OpenBackend connects and migrates; Open wraps it in the engine.
func OpenBackend(ctx context.Context, url string, opts Options) (*Backend, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error may quote the URL, password included.
		return nil, fmt.Errorf("postgres: open: %w: invalid database URL", store.ErrInvalid)
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	cfg.MaxConns = opts.MaxConns
	params := cfg.ConnConfig.RuntimeParams
	if opts.Schema != "" {
		params["search_path"] = pgx.Identifier{opts.Schema}.Sanitize() + ", public"
	}
	if params["application_name"] == "" {
		params["application_name"] = "docket"
	}
	// Docket's statements are short and index-driven: JIT compiling one
	// costs more than running it. PostgreSQL's default (jit on, above a
	// plan cost of 100,000) compiled claims on every execution where their
	// estimates ran high, 0.3–0.7 s each against 5 ms without. A jit set in
	// the URL (options or a parameter) is kept.
	if _, ok := params["jit"]; !ok {
		params["jit"] = "off"
	}
	// For the same reason, no parallel workers: a retry's read of a
	// thousand tasks' states was planned as a parallel scan of two
	// primary-key lists, 75 ms for starting the workers against a few ms
	// without them. Kept when the URL sets it.
	if _, ok := params["max_parallel_workers_per_gather"]; !ok {
		params["max_parallel_workers_per_gather"] = "0"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, interpretError("open", err)
	}
	b := &Backend{cfg: cfg, pool: pool, schema: opts.Schema}
	if err := migrate(ctx, b, opts.Schema, opts.AllowForeign); err != nil {
		pool.Close()
		return nil, err
	}
	return b, nil
}

// Fork opens a new connection pool of opts.MaxConns connections on the
// same database and schema: a separate connection budget, so that a stuck
// query on one handle cannot take the connection another needs. Closing the
// fork leaves this backend usable.
func (b *Backend) Fork(name string, opts store.ForkOptions) (engine.Backend, error) {
	maxConns := opts.MaxConns // PostgreSQL has no single writer: Background needs nothing here
	if maxConns <= 0 {
		maxConns = 1
	}
	cfg := b.cfg.Copy()
	cfg.MaxConns = int32(maxConns)
	cfg.ConnConfig.RuntimeParams["application_name"] = "docket-" + name
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, interpretError("fork", err)
	}
	return &Backend{cfg: cfg, pool: pool, schema: b.schema}, nil
}

// Close closes this handle's connection pool, waiting for connections in
// use to be returned.
func (b *Backend) Close() error {
	b.once.Do(b.pool.Close)
	return nil
}

// txAttempts bounds how often a transaction that lost a deadlock or a
// serialization conflict is run again.
const txAttempts = 5

// errRetry asks Write to run the transaction again: it lost a race that
// READ COMMITTED cannot resolve inside the same transaction.
var errRetry = errors.New("postgres: transaction lost a race")

// Write runs fn in a READ COMMITTED transaction, running it again when
// PostgreSQL aborts it for a deadlock or a serialization failure. BEGIN
// goes to the server with the transaction's first statements and COMMIT
// with its last ones, so a transaction costs no round trip of its own.
func (b *Backend) Write(ctx context.Context, op string, fn func(tx engine.Tx) error) error {
	return b.retry(ctx, op, func() error { return b.pipelined(ctx, fn) })
}

// writePlanSettings keep the hot path's statements on their index walks
// whatever the statistics say. Between two vacuums of task_queue every
// claimed and every finished task leaves dead entries in its indexes;
// measured under continuous load (20,000 tasks a second, autovacuum's
// default one-minute naptime) the claim index grew to 13,000 pages for
// 5,000 live rows. The statistics an autovacuum ANALYZE gathered in that
// state priced a claim of 2,000, and the finish's row locks, as a
// sequential scan of the table and a sort, and those plans held every
// claim, then every finish, for 5 to 6 s at a time. The index walks stay
// cheap in that state (a scan skips entries it has seen dead), and every
// statement of a write transaction reads a few rows by index, so the
// transaction forbids the other plans. SET LOCAL ends with it.
var writePlanSettings = []string{
	"SET LOCAL enable_seqscan = off",
	"SET LOCAL enable_bitmapscan = off",
	"SET LOCAL enable_sort = off",
}

// pipelined runs one attempt of a Write transaction on one connection.
func (b *Backend) pipelined(ctx context.Context, fn func(tx engine.Tx) error) (err error) {
	conn, err := b.acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	t := &txn{ctx: ctx, conn: conn.Conn(), channel: channelName(b.schema)}
	t.later("BEGIN ISOLATION LEVEL READ COMMITTED")
	for _, s := range writePlanSettings {
		t.later(s)
	}
	defer func() {
		if conn.Conn().PgConn().TxStatus() == 'I' {
			return
		}
		// A transaction is open or failed (this one, or after its commit
		// the notifications' one): roll it back, even when ctx has ended;
		// a connection that cannot is not reused.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, rerr := conn.Exec(rctx, "ROLLBACK"); rerr != nil {
			conn.Hijack().Close(rctx)
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	return t.commit()
}

// write runs fn in a READ COMMITTED transaction (pgx's own), retried like
// Write: for migrations and admin writes off the hot path.
func (b *Backend) write(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	return b.retry(ctx, op, func() error {
		conn, err := b.acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, fn)
	})
}

// retry runs attempt again when PostgreSQL aborted it for a deadlock or a
// serialization failure, and maps the final error.
func (b *Backend) retry(ctx context.Context, op string, attemptFn func() error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = attemptFn()
		if err == nil || !retryable(err) || attempt == txAttempts {
			break
		}
		// Jittered backoff so the transactions that collided do not
		// collide again in lockstep. (Real time: this is the database's
		// contention, not a schedule the queue's clock drives.)
		timer := time.NewTimer(time.Duration(rand.Int64N(int64(time.Millisecond) << attempt)))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return interpretError(op, ctx.Err())
		}
	}
	return interpretError(op, err)
}

// ts is a time as the store writes it: millisecond precision, UTC.
func ts(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }
