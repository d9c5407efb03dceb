package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
)

// taskCols is the column list scanTask reads, in order.
const taskCols = `id, tenant, author, workflow, pool, state, priority, attempt, max_attempts,
	lease_epoch, deadline_at, created_at, started_at, finished_at, trace_id, config_version,
	result, error_code`

func scanTask(r pgx.Row) (*dockettype.Task, error) {
	var (
		t                 dockettype.Task
		pool, state       string
		started, finished *time.Time
		result            []byte
		code              *string
	)
	err := r.Scan(&t.ID, &t.Tenant, &t.Author, &t.Workflow, &pool, &state, &t.Priority,
		&t.Attempt, &t.MaxAttempts, &t.LeaseEpoch, &t.DeadlineAt, &t.CreatedAt, &started, &finished,
		&t.TraceID, &t.ConfigVersion, &result, &code)
	if err != nil {
		return nil, err
	}
	t.Pool, t.State = dockettype.Pool(pool), dockettype.State(state)
	t.DeadlineAt = t.DeadlineAt.UTC()
	t.CreatedAt = t.CreatedAt.UTC()
	t.StartedAt = utcPtr(started)
	t.FinishedAt = utcPtr(finished)
	if len(result) > 0 {
		t.Result = result
	}
	if code != nil && *code != "" {
		t.Error = &dockettype.TaskError{Code: dockettype.Code(*code)}
	}
	return &t, nil
}

func scanTasks(rows pgx.Rows) ([]*dockettype.Task, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*dockettype.Task, error) { return scanTask(r) })
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
