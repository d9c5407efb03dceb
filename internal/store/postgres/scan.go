package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docket-dev/docket/dockettype"
)

// taskCols is the column list scanTask reads, over tasks t, its live row q
// and its result row r (either may be absent).
const taskCols = `t.id, t.tenant, t.author, t.workflow, t.pool, coalesce(q.state, r.state), t.priority,
	coalesce(q.attempt, r.attempt), t.max_attempts, coalesce(q.lease_epoch, r.lease_epoch),
	t.deadline_at, t.created_at, t.run_at, coalesce(q.started_at, r.started_at), r.finished_at,
	t.trace_id, t.config_version, r.result, coalesce(r.error_code, q.error_code),
	coalesce(r.error_message, q.error_message)`

// listCols is taskCols without the result: list pages stay small whatever
// the tasks returned.
const listCols = `t.id, t.tenant, t.author, t.workflow, t.pool, coalesce(q.state, r.state), t.priority,
	coalesce(q.attempt, r.attempt), t.max_attempts, coalesce(q.lease_epoch, r.lease_epoch),
	t.deadline_at, t.created_at, t.run_at, coalesce(q.started_at, r.started_at), r.finished_at,
	t.trace_id, t.config_version, NULL::bytea, coalesce(r.error_code, q.error_code),
	coalesce(r.error_message, q.error_message)`

// claimCols is taskCols for a task being claimed: it is live, so it has no
// result row to join.
const claimCols = `t.id, t.tenant, t.author, t.workflow, t.pool, q.state, t.priority, q.attempt, t.max_attempts,
	q.lease_epoch, t.deadline_at, t.created_at, t.run_at, q.started_at, NULL::timestamptz, t.trace_id,
	t.config_version, NULL::bytea, q.error_code, q.error_message`

// taskSelect reads tasks with their live and result rows.
func taskSelect(withResult bool) string {
	cols := listCols
	if withResult {
		cols = taskCols
	}
	return "SELECT " + cols + ` FROM tasks t LEFT JOIN task_queue q ON q.id = t.id LEFT JOIN task_results r ON r.task_id = t.id`
}

func scanTask(r pgx.Row) (*dockettype.Task, error) {
	var (
		t                        dockettype.Task
		pool, state              string
		runAt, started, finished *time.Time
		result                   []byte
		code, msg                *string
	)
	err := r.Scan(&t.ID, &t.Tenant, &t.Author, &t.Workflow, &pool, &state, &t.Priority,
		&t.Attempt, &t.MaxAttempts, &t.LeaseEpoch, &t.DeadlineAt, &t.CreatedAt, &runAt, &started, &finished,
		&t.TraceID, &t.ConfigVersion, &result, &code, &msg)
	if err != nil {
		return nil, err
	}
	t.Pool, t.State = dockettype.Pool(pool), dockettype.State(state)
	t.DeadlineAt = t.DeadlineAt.UTC()
	t.CreatedAt = t.CreatedAt.UTC()
	t.RunAt = utcPtr(runAt)
	t.StartedAt = utcPtr(started)
	t.FinishedAt = utcPtr(finished)
	if len(result) > 0 {
		t.Result = result
	}
	if code != nil && *code != "" {
		t.Error = &dockettype.TaskError{Code: dockettype.Code(*code)}
		if msg != nil {
			t.Error.Message = *msg
		}
	}
	return &t, nil
}

func scanTasks(rows pgx.Rows) ([]*dockettype.Task, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*dockettype.Task, error) { return scanTask(r) })
}

// extraScanner appends destinations to a row scan, so that scanTask can read
// a row that carries more columns than a task.
type extraScanner struct {
	r     pgx.Row
	extra []any
}

func (e *extraScanner) Scan(dest ...any) error { return e.r.Scan(append(dest, e.extra...)...) }
