package engine

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// finishedEvents is the predicate of the partial index
// task_events_finished (at, to_state): the events to a terminal state.
// ThroughputSQL spells it alike, so that both databases can use the index.
const finishedEvents = "to_state IN ('succeeded', 'failed', 'timed_out', 'cancelled')"

// ThroughputSQL is Throughput's statement in the dialect d: per bucket
// (the number of whole $2 milliseconds from $1, the window's start in
// milliseconds since the epoch) and per terminal state, the events to that
// state in [$3, $4), read from the range of task_events_finished alone.
func ThroughputSQL(d *Dialect) string {
	return `SELECT (` + d.AtMillis + ` - $1) / $2, to_state, count(*) FROM task_events
		WHERE at >= $3 AND at < $4 AND ` + finishedEvents + `
		GROUP BY 1, 2`
}

// throughputRow is one row of ThroughputSQL.
type throughputRow struct {
	bucket int64
	state  string
	n      int
}

// Throughput counts the terminal events of the window per bucket and per
// state; see store.Statter.
func (s *Store) Throughput(ctx context.Context, p *store.ThroughputParams) ([]store.ThroughputBucket, error) {
	since, until := ts(p.Since), ts(p.Until)
	if p.Bucket < time.Millisecond || p.Bucket%time.Millisecond != 0 {
		return nil, invalid("throughput", "the bucket must be a whole number of milliseconds")
	}
	if !until.After(since) {
		return nil, invalid("throughput", "the window is empty")
	}
	n := (until.Sub(since) + p.Bucket - 1) / p.Bucket
	if n > store.MaxThroughputBuckets {
		return nil, invalid("throughput", "the window holds too many buckets")
	}
	rows, err := read(ctx, s.b, "throughput", func(q Querier) ([]throughputRow, error) {
		return all(q, func(r Row) (throughputRow, error) {
			var row throughputRow
			return row, r.Scan(&row.bucket, &row.state, &row.n)
		}, ThroughputSQL(s.b.Dialect()), since.UnixMilli(), p.Bucket.Milliseconds(), since, until)
	})
	if err != nil {
		return nil, err
	}
	out := make([]store.ThroughputBucket, n)
	for i := range out {
		out[i].Start = since.Add(time.Duration(i) * p.Bucket)
	}
	for _, row := range rows {
		if row.bucket < 0 || row.bucket >= int64(n) {
			continue
		}
		b := &out[row.bucket]
		switch dockettype.State(row.state) {
		case dockettype.StateSucceeded:
			b.Succeeded += row.n
		case dockettype.StateFailed:
			b.Failed += row.n
		case dockettype.StateTimedOut:
			b.TimedOut += row.n
		case dockettype.StateCancelled:
			b.Cancelled += row.n
		}
	}
	return out, nil
}
