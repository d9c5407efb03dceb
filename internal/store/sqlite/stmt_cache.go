package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStmts bounds the statement cache; queries past it run unprepared.
const maxCachedStmts = 512

// stmtCache keeps prepared write statements. Parsing a statement is a large
// share of a short write's cost in SQLite, and every write transaction runs
// the same few dozen statements.
//
// database/sql reuses a statement inside a transaction (Tx.StmtContext) only
// if it was prepared on the *sql.DB, and preparing needs a free connection:
// so the writer pool has two connections, one of which can prepare while the
// other holds the open transaction. The write gate still admits one write
// transaction at a time.
type stmtCache struct {
	mu    sync.Mutex
	db    *sql.DB
	stmts map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}}
}

// get returns the prepared statement for query, or nil if it cannot be
// cached (the caller then runs the query unprepared).
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[query]; ok {
		return st
	}
	if len(c.stmts) >= maxCachedStmts {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil // the unprepared run reports the error
	}
	c.stmts[query] = st
	return st
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		_ = st.Close()
	}
	c.stmts = nil
}

// wtx is a write transaction whose statements come from the cache. It has
// the query methods of *sql.Tx, so write code reads like plain database/sql.
type wtx struct {
	*sql.Tx
	cache *stmtCache
}

func (w *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := w.cache.get(ctx, query); st != nil {
		return w.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return w.Tx.ExecContext(ctx, query, args...)
}

func (w *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := w.cache.get(ctx, query); st != nil {
		return w.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return w.Tx.QueryContext(ctx, query, args...)
}

func (w *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := w.cache.get(ctx, query); st != nil {
		return w.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return w.Tx.QueryRowContext(ctx, query, args...)
}
