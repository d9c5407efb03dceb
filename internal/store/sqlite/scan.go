package sqlite

import (
	"database/sql"
	"time"

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
	t.trace_id, t.config_version, NULL, coalesce(r.error_code, q.error_code),
	coalesce(r.error_message, q.error_message)`

// taskSelect reads tasks with their live and result rows.
func taskSelect(withResult bool) string {
	cols := listCols
	if withResult {
		cols = taskCols
	}
	return "SELECT " + cols + ` FROM tasks t LEFT JOIN task_queue q ON q.id = t.id LEFT JOIN task_results r ON r.task_id = t.id`
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanTask(r *sql.Rows) (*dockettype.Task, error) { return scanTaskExtra(r) }

func scanTaskExtra(r scanner, extra ...any) (*dockettype.Task, error) {
	var (
		t                        dockettype.Task
		pool, state              string
		deadline, created        int64
		runAt, started, finished sql.NullInt64
		result                   []byte
		code, msg                sql.NullString
	)
	dest := []any{&t.ID, &t.Tenant, &t.Author, &t.Workflow, &pool, &state, &t.Priority,
		&t.Attempt, &t.MaxAttempts, &t.LeaseEpoch, &deadline, &created, &runAt, &started, &finished,
		&t.TraceID, &t.ConfigVersion, &result, &code, &msg}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	t.Pool, t.State = dockettype.Pool(pool), dockettype.State(state)
	t.DeadlineAt, t.CreatedAt = fromMS(deadline), fromMS(created)
	t.RunAt, t.StartedAt, t.FinishedAt = fromNullMS(runAt), fromNullMS(started), fromNullMS(finished)
	if len(result) > 0 {
		t.Result = result
	}
	if code.Valid && code.String != "" {
		t.Error = &dockettype.TaskError{Code: dockettype.Code(code.String), Message: msg.String}
	}
	return &t, nil
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
