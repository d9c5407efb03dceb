package postgres

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
)

// txn wraps one write transaction. It accumulates the history events and
// counter changes a batch makes and writes them once, in flush, so that a
// batch of N tasks costs a handful of statements for the shared rows.
//
// Lock order. Every transaction that changes a pool's in_flight counter or
// its tenant_queues rows takes the pool's row lock first, then tenants, then
// tenant_queues, each set in sorted order. A claim holds its pool's row lock
// from its first statement, so while it runs no other transaction can change
// that pool's ready counters.
type txn struct {
	ctx    context.Context
	tx     pgx.Tx
	now    time.Time
	events []event
	// releases per tenant and per pool (reservations released this txn)
	tenantRelease map[string]int
	poolRelease   map[dockettype.Pool]int
	// ready-queue deltas per (pool, tenant)
	queues map[queueKey]int
	// pools whose row this transaction already holds locked
	locked map[dockettype.Pool]bool
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

func newTxn(ctx context.Context, tx pgx.Tx, now time.Time) *txn {
	return &txn{
		ctx: ctx, tx: tx, now: ts(now),
		tenantRelease: map[string]int{},
		poolRelease:   map[dockettype.Pool]int{},
		queues:        map[queueKey]int{},
		locked:        map[dockettype.Pool]bool{},
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
	err := t.tx.QueryRow(t.ctx, `UPDATE reservations SET released_at = $1
		WHERE task_id = $2 AND released_at IS NULL RETURNING tenant, pool`, t.now, taskID).Scan(&tenant, &pool)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	t.tenantRelease[tenant]++
	t.poolRelease[pool]++
	return nil
}

// lockTasks locks the rows of the tasks a batch is about to change, in ID
// order, so that two batches sharing tasks (a finish and a deadline sweep, a
// heartbeat and a recovery) queue instead of deadlocking. A single task
// needs no ordering.
func lockTasks(ctx context.Context, tx pgx.Tx, ids []string) error {
	if len(ids) < 2 {
		return nil
	}
	_, err := tx.Exec(ctx, "SELECT 1 FROM tasks WHERE id = ANY($1) ORDER BY id FOR UPDATE", ids)
	return err
}

// flush writes the accumulated counter changes and events in one round
// trip, taking the row locks in the package's lock order.
func (t *txn) flush() error {
	b := &pgx.Batch{}

	pools := map[dockettype.Pool]bool{}
	for p, n := range t.poolRelease {
		if n != 0 {
			pools[p] = true
		}
	}
	var qkeys []queueKey
	for k, d := range t.queues {
		if d != 0 {
			pools[k.pool] = true
			qkeys = append(qkeys, k)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(pools)) {
		switch n := t.poolRelease[p]; {
		case n != 0:
			b.Queue("UPDATE pools SET in_flight = in_flight - $1 WHERE name = $2", n, string(p))
		case !t.locked[p]:
			b.Queue("SELECT 1 FROM pools WHERE name = $1 FOR UPDATE", string(p))
		}
		t.locked[p] = true
	}
	for _, tenant := range slices.Sorted(maps.Keys(t.tenantRelease)) {
		if n := t.tenantRelease[tenant]; n != 0 {
			b.Queue("UPDATE tenants SET in_flight = in_flight - $1 WHERE id = $2", n, tenant)
		}
	}
	if len(qkeys) > 0 {
		slices.SortFunc(qkeys, func(a, b queueKey) int {
			if c := strings.Compare(string(a.pool), string(b.pool)); c != 0 {
				return c
			}
			return strings.Compare(a.tenant, b.tenant)
		})
		var up, down queueDeltas
		for _, k := range qkeys {
			if d := t.queues[k]; d > 0 {
				up.add(k, d)
			} else {
				down.add(k, d)
			}
		}
		if len(up.pools) > 0 {
			b.Queue(addQueuedSQL, up.pools, up.tenants, up.deltas)
		}
		if len(down.pools) > 0 {
			b.Queue(`UPDATE tenant_queues q SET queued = GREATEST(q.queued + d.delta, 0)
				FROM unnest($1::text[], $2::text[], $3::int[]) AS d (pool, tenant, delta)
				WHERE q.pool = d.pool AND q.tenant = d.tenant`, down.pools, down.tenants, down.deltas)
		}
	}
	clear(t.queues)
	t.tenantRelease = map[string]int{}
	t.poolRelease = map[dockettype.Pool]int{}

	if len(t.events) > 0 {
		n := len(t.events)
		ids := make([]string, n)
		froms := make([]string, n)
		tos := make([]string, n)
		epochs := make([]int64, n)
		codes := make([]string, n)
		for i, e := range t.events {
			ids[i], froms[i], tos[i], epochs[i], codes[i] = e.taskID, string(e.from), string(e.to), e.epoch, string(e.code)
		}
		b.Queue(`INSERT INTO task_events (task_id, from_state, to_state, epoch, code, at)
			SELECT e.task_id, e.from_state, e.to_state, e.epoch, e.code, $6
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[])
				WITH ORDINALITY AS e (task_id, from_state, to_state, epoch, code, ord)
			ORDER BY e.ord`, ids, froms, tos, epochs, codes, t.now)
		t.events = t.events[:0]
	}
	if b.Len() == 0 {
		return nil
	}
	return t.tx.SendBatch(t.ctx, b).Close()
}

// queueDeltas is a column-wise list of ready-count changes, for unnest.
type queueDeltas struct {
	pools, tenants []string
	deltas         []int32
}

func (q *queueDeltas) add(k queueKey, d int) {
	q.pools = append(q.pools, string(k.pool))
	q.tenants = append(q.tenants, k.tenant)
	q.deltas = append(q.deltas, int32(d))
}

// addQueuedSQL adds to tenants' ready counts in pools (deltas > 0). A tenant
// whose count goes from zero to positive starts at no less than the pool's
// virtual clock, so an idle tenant cannot bank credit and then starve the
// others. The caller holds the pools' row locks, so the clock is current.
const addQueuedSQL = `INSERT INTO tenant_queues AS q (pool, tenant, queued, vtime)
	SELECT d.pool, d.tenant, d.delta, p.vclock
	FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS d (pool, tenant, delta, ord)
	JOIN pools p ON p.name = d.pool
	ORDER BY d.ord
	ON CONFLICT (pool, tenant) DO UPDATE SET
		vtime = CASE WHEN q.queued = 0 THEN GREATEST(q.vtime, excluded.vtime) ELSE q.vtime END,
		queued = q.queued + excluded.queued`

// ts is a time as the store writes it: millisecond precision, UTC.
func ts(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }
