package engine

import (
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Waiting is a task's WaitingOn.
func Waiting(why string) dockettype.WaitingOn { return dockettype.WaitingOn(why) }

// taskColumns is the column list ScanTask reads, over tasks t, its live row
// q and its result row r (either may be absent); result is the result's
// column, or NULL for reads that leave it out.
func taskColumns(result string) string {
	return `t.id, t.tenant, t.author, t.workflow, t.pool, coalesce(q.state, r.state), t.priority,
	coalesce(q.attempt, r.attempt), t.max_attempts, coalesce(q.lease_epoch, r.lease_epoch),
	coalesce(q.deadline_at, t.deadline_at), t.created_at, t.run_at, coalesce(q.started_at, r.started_at), r.finished_at,
	t.trace_id, t.config_version, ` + result + `, coalesce(r.error_code, q.error_code),
	coalesce(r.error_message, q.error_message), ` + waitingOnColumns + `, t.concurrency_key, q.run_after`
}

// TaskColumns are the columns of a task with its result (see ScanTask).
var TaskColumns = taskColumns("r.result")

// listColumns are the columns of a list page: without the result, so that
// pages stay small whatever the tasks returned.
var listColumns = taskColumns("NULL")

// TaskSelect reads tasks with their live and result rows, the result only
// when withResult; a backend adds its WHERE clause.
func TaskSelect(withResult bool) string {
	cols := listColumns
	if withResult {
		cols = TaskColumns
	}
	return "SELECT " + cols + " FROM tasks t LEFT JOIN task_queue q ON q.id = t.id LEFT JOIN task_results r ON r.task_id = t.id"
}

// ScanTask reads a task from the columns of TaskSelect, then extra.
func ScanTask(r Row, extra ...any) (*dockettype.Task, error) {
	var (
		t           dockettype.Task
		pool, state string
		result      []byte
		code, msg   *string
		waiting     waitingRow
		key         *string
		runAfter    *time.Time
	)
	dest := []any{&t.ID, &t.Tenant, &t.Author, &t.Workflow, &pool, &state, &t.Priority,
		&t.Attempt, &t.MaxAttempts, &t.LeaseEpoch, At(&t.DeadlineAt), At(&t.CreatedAt), AtOrNil(&t.RunAt),
		AtOrNil(&t.StartedAt), AtOrNil(&t.FinishedAt), &t.TraceID, &t.ConfigVersion, &result, &code, &msg}
	dest = append(dest, waiting.dest()...)
	dest = append(dest, &key, AtOrNil(&runAfter))
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	t.Pool, t.State = dockettype.Pool(pool), dockettype.State(state)
	if key != nil {
		t.ConcurrencyKey = *key
	}
	t.WaitingOn = waitingOn(t.State, waiting)
	if t.WaitingOn == "" && t.State == dockettype.StateQueued && runAfter != nil {
		if runAfter.Equal(HeldUntil) {
			t.WaitingOn = Waiting(store.WaitingOnConcurrencyKey)
		} else {
			t.WaitingOn = Waiting(store.WaitingOnRunAt)
		}
	}
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

func scanTask(r Row) (*dockettype.Task, error) { return ScanTask(r) }
