package postgres

// claimCols is taskCols for a task being claimed: it is live, so it has no
// result row to join.
const claimCols = `t.id, t.tenant, t.author, t.workflow, t.pool, q.state, t.priority, q.attempt, t.max_attempts,
	q.lease_epoch, t.deadline_at, t.created_at, t.run_at, q.started_at, NULL::timestamptz, t.trace_id,
	t.config_version, NULL::bytea, q.error_code, q.error_message, q.deps_pending, t.concurrency_key, q.run_after`
