package sqlite

import (
	"database/sql"

	"github.com/docket-dev/docket/dockettype"
)

// taskCols is the column list scanTask reads, in order.
const taskCols = `id, tenant, author, workflow, pool, state, priority, attempt, max_attempts,
	lease_epoch, deadline_at, created_at, started_at, finished_at, trace_id, config_version,
	result, error_code`

type rowScanner interface {
	Scan(dest ...any) error
}

func scanTask(r rowScanner) (*dockettype.Task, error) {
	var (
		t                 dockettype.Task
		deadline, created int64
		started, finished sql.NullInt64
		result            []byte
		code              sql.NullString
	)
	err := r.Scan(&t.ID, &t.Tenant, &t.Author, &t.Workflow, &t.Pool, &t.State, &t.Priority,
		&t.Attempt, &t.MaxAttempts, &t.LeaseEpoch, &deadline, &created, &started, &finished,
		&t.TraceID, &t.ConfigVersion, &result, &code)
	if err != nil {
		return nil, err
	}
	t.DeadlineAt = fromMS(deadline)
	t.CreatedAt = fromMS(created)
	t.StartedAt = fromNullMS(started)
	t.FinishedAt = fromNullMS(finished)
	if len(result) > 0 {
		t.Result = append([]byte(nil), result...)
	}
	if code.Valid && code.String != "" {
		t.Error = &dockettype.TaskError{Code: dockettype.Code(code.String)}
	}
	return &t, nil
}

func scanTasks(rows *sql.Rows) ([]*dockettype.Task, error) {
	defer rows.Close()
	var out []*dockettype.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
