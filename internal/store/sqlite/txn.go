package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// txn wraps one write transaction. It accumulates the history events and
// counter changes a batch makes and writes them once, in flush, so that a
// batch of N tasks costs a handful of statements for the shared rows.
type txn struct {
	ctx    context.Context
	tx     *wtx
	now    int64
	events []event
	// releases per tenant and per pool (reservations released this txn)
	tenantRelease map[string]int
	poolRelease   map[dockettype.Pool]int
	// ready-queue deltas per (pool, tenant)
	queues map[queueKey]int
}

type event struct {
	taskID   string
	from, to dockettype.State
	epoch    int64
	code     dockettype.Code
}

type queueKey struct {
	pool   dockettype.Pool
	tenant string
}

func newTxn(ctx context.Context, tx *wtx, now time.Time) *txn {
	return &txn{
		ctx: ctx, tx: tx, now: ms(now),
		tenantRelease: map[string]int{},
		poolRelease:   map[dockettype.Pool]int{},
		queues:        map[queueKey]int{},
	}
}

func (t *txn) event(taskID string, from, to dockettype.State, epoch int64, code dockettype.Code) {
	t.events = append(t.events, event{taskID, from, to, epoch, code})
}

// queueDelta records a change in the number of ready queued tasks.
func (t *txn) queueDelta(pool dockettype.Pool, tenant string, d int) {
	t.queues[queueKey{pool, tenant}] += d
}

// release releases the task's reservation if it still holds one. The
// released_at guard makes the release happen exactly once.
func (t *txn) release(taskID string) error {
	var tenant string
	var pool dockettype.Pool
	err := t.tx.QueryRowContext(t.ctx, `UPDATE reservations SET released_at = ?
		WHERE task_id = ? AND released_at IS NULL RETURNING tenant, pool`, t.now, taskID).Scan(&tenant, &pool)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	t.tenantRelease[tenant]++
	t.poolRelease[pool]++
	return nil
}

// flush writes the accumulated events and counter changes.
func (t *txn) flush() error {
	for tenant, n := range t.tenantRelease {
		if _, err := t.tx.ExecContext(t.ctx, "UPDATE tenants SET in_flight = in_flight - ? WHERE id = ?", n, tenant); err != nil {
			return err
		}
	}
	for pool, n := range t.poolRelease {
		if _, err := t.tx.ExecContext(t.ctx, "UPDATE pools SET in_flight = in_flight - ? WHERE name = ?", n, pool); err != nil {
			return err
		}
	}
	for k, d := range t.queues {
		if d == 0 {
			continue
		}
		if err := t.addQueued(k.pool, k.tenant, d); err != nil {
			return err
		}
	}
	return t.flushEvents()
}

// addQueued changes a tenant's ready count in a pool. A tenant whose count
// goes from zero to positive starts at no less than the pool's virtual
// clock, so an idle tenant cannot bank credit and then starve the others.
func (t *txn) addQueued(pool dockettype.Pool, tenant string, d int) error {
	_, err := t.tx.ExecContext(t.ctx, `INSERT INTO tenant_queues (pool, tenant, queued, vtime)
		VALUES (?1, ?2, max(?3, 0), (SELECT vclock FROM pools WHERE name = ?1))
		ON CONFLICT (pool, tenant) DO UPDATE SET
			vtime = CASE WHEN tenant_queues.queued = 0 THEN max(tenant_queues.vtime, excluded.vtime) ELSE tenant_queues.vtime END,
			queued = max(tenant_queues.queued + ?3, 0)`, pool, tenant, d)
	return err
}

const eventChunk = 150 // 6 params each, well under SQLite's variable limit

func (t *txn) flushEvents() error {
	for len(t.events) > 0 {
		n := min(len(t.events), eventChunk)
		chunk := t.events[:n]
		t.events = t.events[n:]
		var b strings.Builder
		b.WriteString("INSERT INTO task_events (task_id, from_state, to_state, epoch, code, at) VALUES ")
		args := make([]any, 0, n*6)
		for i, e := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,?,?)")
			args = append(args, e.taskID, string(e.from), string(e.to), e.epoch, string(e.code), t.now)
		}
		if _, err := t.tx.ExecContext(t.ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

// placeholders returns "?,?,…" with n marks.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}
