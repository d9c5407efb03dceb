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
)

// Options tunes the PostgreSQL store.
type Options struct {
	// MaxConns bounds the store's connection pool; default 8.
	MaxConns int32
	// Schema, when set, is created if missing and put first on every
	// connection's search_path, so that several Docket installations (or
	// test runs) can share one database.
	Schema string
}

// Store implements store.Store on PostgreSQL.
type Store struct {
	cfg  *pgxpool.Config // the parsed configuration, copied by Fork
	pool *pgxpool.Pool
	once sync.Once
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url and applies pending migrations.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
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
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, interpretError("open", err)
	}
	s := &Store{cfg: cfg, pool: pool}
	if err := migrate(ctx, s, opts.Schema); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Fork opens a new connection pool of maxConns connections on the same
// database and schema: a separate connection budget, so that a stuck query
// on one handle cannot take the connection another needs. Closing the fork
// leaves this store usable.
func (s *Store) Fork(name string, opts store.ForkOptions) (store.Store, error) {
	maxConns := opts.MaxConns // PostgreSQL has no single writer: Background needs nothing here
	if maxConns <= 0 {
		maxConns = 1
	}
	cfg := s.cfg.Copy()
	cfg.MaxConns = int32(maxConns)
	cfg.ConnConfig.RuntimeParams["application_name"] = "docket-" + name
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, interpretError("fork", err)
	}
	return &Store{cfg: cfg, pool: pool}, nil
}

// Close closes this handle's connection pool, waiting for connections in
// use to be returned.
func (s *Store) Close() error {
	s.once.Do(s.pool.Close)
	return nil
}

// Ping checks that the database answers and holds Docket's schema.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.pool.QueryRow(ctx, "SELECT 1 FROM pools LIMIT 1").Scan(&one); err != nil {
		return interpretError("ping", err)
	}
	return nil
}

// txAttempts bounds how often a transaction that lost a deadlock or a
// serialization conflict is run again.
const txAttempts = 5

// errRetry asks write to run the transaction again: it lost a race that
// READ COMMITTED cannot resolve inside the same transaction.
var errRetry = errors.New("postgres: transaction lost a race")

// write runs fn in a READ COMMITTED transaction, running it again (fn must
// reset whatever it accumulates) when PostgreSQL aborts it for a deadlock or
// a serialization failure.
func (s *Store) write(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, fn)
		if err == nil || !retryable(err) || attempt == txAttempts {
			break
		}
		// Jittered backoff so the transactions that collided do not
		// collide again in lockstep.
		wait := time.Duration(rand.Int64N(int64(time.Millisecond) << attempt))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return interpretError(op, ctx.Err())
		}
	}
	return interpretError(op, err)
}
