package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/internal/store"
)

// Notifications go to one channel per schema (a database may hold several
// installations, and every test runs in its own schema). A payload is
// "ready:QUEUE" or "done:ID,ID,…", kept under PostgreSQL's 8,000-byte limit.
const (
	readyPrefix = "ready:"
	donePrefix  = "done:"
	// maxPayload leaves room under the server's 8,000-byte limit.
	maxPayload = 7800
)

func channelName(schema string) string {
	if schema == "" {
		return "docket"
	}
	return "docket." + schema
}

// Notify collects the notifications; Write sends them when the
// transaction has committed (see sendNotes).
func (t *txn) Notify(ready []store.Queue, finished []string) error {
	for _, p := range ready {
		t.notes = append(t.notes, readyPrefix+string(p))
	}
	var b strings.Builder
	for _, id := range finished {
		if b.Len() > 0 && b.Len()+1+len(id) > maxPayload {
			t.notes = append(t.notes, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(donePrefix)
		} else {
			b.WriteByte(',')
		}
		b.WriteString(id)
	}
	if b.Len() > 0 {
		t.notes = append(t.notes, b.String())
	}
	return nil
}

// sendNotes queues, after the transaction's COMMIT and in the same round
// trip, a transaction of its own that sends the notifications, committed
// without waiting for its WAL to reach the disk.
//
// A NOTIFY inside the data transaction would be cheaper to write but not to
// run: PostgreSQL serializes the commits of notifying transactions on one
// lock, held until the commit has flushed the WAL, so every admission,
// claim and finish on every node would wait for the fsync of the one
// before it instead of sharing a flush with it (sampled under 64 HTTP
// clients: 237 of 4,024 active backends waited on that lock; 5 of 3,134
// once the notifications were sent apart, where the lock is held for
// microseconds). What this gives up: a
// notification sent after its data commit can be lost when the connection
// or the server fails in between; listeners poll as well, so it costs a
// wake-up delay, never work.
func (t *txn) sendNotes() {
	if len(t.notes) == 0 {
		return
	}
	t.later("BEGIN")
	t.later("SET LOCAL synchronous_commit = off")
	for _, n := range t.notes {
		t.later("SELECT pg_notify($1, $2)", t.channel, n)
	}
	t.later("COMMIT")
	t.notes = nil
}

var _ store.Listener = (*Backend)(nil)

// Listen holds its own connection (not one of the pool's), LISTENs on the
// schema's channel and hands each notification to fn. When the connection
// is lost it reconnects with capped backoff; notifications sent meanwhile
// are lost, which callers tolerate (they poll slowly as well).
func (b *Backend) Listen(ctx context.Context, fn func(store.Notification)) error {
	delay := 100 * time.Millisecond
	for {
		err := b.listenOnce(ctx, fn, func() { delay = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return nil
		}
		_ = err // the cause is a lost connection; the caller's metrics see the outage elsewhere
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func (b *Backend) listenOnce(ctx context.Context, fn func(store.Notification), connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, b.cfg.ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channelName(b.schema)}.Sanitize()); err != nil {
		return err
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if note, ok := parseNotification(n.Payload); ok {
			fn(note)
		}
	}
}

// parseNotification reads a payload Notify wrote.
func parseNotification(payload string) (store.Notification, bool) {
	switch {
	case strings.HasPrefix(payload, readyPrefix):
		q := store.Queue(strings.TrimPrefix(payload, readyPrefix))
		return store.Notification{Ready: q}, q.Valid()
	case strings.HasPrefix(payload, donePrefix):
		ids := strings.Split(strings.TrimPrefix(payload, donePrefix), ",")
		return store.Notification{Finished: ids}, len(ids) > 0
	}
	return store.Notification{}, false
}
