package dockettype

// Code is a stable error code. One closed set is used alike in API answers,
// a task's error.code, metric labels and logs. Extend it deliberately and
// document each new code in docs/http-api.md (TestDocsListEveryCode checks it).
type Code string

const (
	CodeUnauthenticated     Code = "unauthenticated"      // 401: no key, unknown key, revoked key
	CodeForbidden           Code = "forbidden"            // 403: the key's role may not do this
	CodeInvalidRequest      Code = "invalid_request"      // 400: malformed JSON, unknown field, bad header or parameter
	CodeUnknownWorkflow     Code = "unknown_workflow"     // 400: the workflow is not registered in this mode
	CodePayloadTooLarge     Code = "payload_too_large"    // 413: body over the limit
	CodeNotFound            Code = "not_found"            // 404: no such task for this tenant
	CodeMethodNotAllowed    Code = "method_not_allowed"   // 405: the route does not serve this method (see the Allow header)
	CodeIdempotencyConflict Code = "idempotency_conflict" // 409: key reused with a different request
	CodeBuiltinWorkflow     Code = "builtin_workflow"     // 409: the name is a workflow compiled into the server (it cannot be registered or removed as a remote one)
	CodeQueueFull           Code = "queue_full"           // 429: the pool's capacity is reached
	CodeNotRetryable        Code = "not_retryable"        // 409: retry of a task that succeeded or is not terminal
	// 409: the task's pool, tenant or workflow is paused and the operator
	// chose to refuse submissions while it is (POST /v1/admin/pause with
	// "refuse_submissions": true); nothing is admitted.
	CodeSubmissionsPaused   Code = "submissions_paused"
	CodeTenantQuotaExceeded Code = "tenant_quota_exceeded" // 429: the tenant's in-flight limit is reached
	// 429: the tenant keeps as many bytes (inputs, results, evidence) as
	// its storage quota allows; retention frees them.
	CodeStorageQuotaExceeded Code = "storage_quota_exceeded"
	CodeTooManyRequests      Code = "too_many_requests" // 429: too many concurrent long polls, for the tenant or the server; every connection of the store in use; too many request bodies being read at once, or connections from one address
	CodeStoreUnavailable     Code = "store_unavailable" // 503: the database cannot be reached
	CodeInternal             Code = "internal"          // 500: an unexpected server fault (logged by code only)
	// 503 from GET /readyz: the store reported its file corrupt (SQLite
	// SQLITE_CORRUPT, SQLITE_NOTADB); the node stays not ready until it is
	// restarted on a sound database.
	CodeStoreCorrupt Code = "store_corrupt"
	// 503 from GET /readyz: the store's writes fail (a full disk, a
	// read-only file) while it still answers reads; ready again once a
	// write succeeds.
	CodeWritesFailing     Code = "writes_failing"
	CodeInvalidDependency Code = "invalid_dependency" // 400: depends_on names an unknown task, another tenant's, a later or missing batch item, or makes a cycle; nothing is admitted

	CodeLeaseLost        Code = "lease_lost"        // task: attempts exhausted after lease expiries
	CodeWorkerPanic      Code = "worker_panic"      // task: the workflow panicked
	CodeDeadlineExceeded Code = "deadline_exceeded" // task: the task timed out
	CodeCancelled        Code = "cancelled"         // task: cancelled by a client
	CodeWorkflowError    Code = "workflow_error"    // task: the workflow returned an unclassified error
	CodeInvalidInput     Code = "invalid_input"     // task: the workflow refused its input
	CodeShutdown         Code = "shutdown"          // task: the node stopped before the task finished
	CodeResultTooLarge   Code = "result_too_large"  // task: the workflow's result is over the server's limit
	CodeDependencyFailed Code = "dependency_failed" // task: a task it depends on failed, timed out or was cancelled
	CodeRetried          Code = "retried"           // event: a client queued the terminal task again (POST /v1/tasks/{id}/retry, a bulk retry)

	CodeStaleLease Code = "stale_lease" // internal, metric: a fenced write was refused
)

// Codes lists the closed set, in documentation order.
var Codes = []Code{
	CodeUnauthenticated, CodeForbidden, CodeInvalidRequest, CodeUnknownWorkflow,
	CodePayloadTooLarge, CodeNotFound, CodeMethodNotAllowed, CodeIdempotencyConflict, CodeBuiltinWorkflow, CodeNotRetryable, CodeSubmissionsPaused, CodeQueueFull,
	CodeTenantQuotaExceeded, CodeStorageQuotaExceeded, CodeTooManyRequests, CodeStoreUnavailable, CodeInternal,
	CodeStoreCorrupt, CodeWritesFailing, CodeInvalidDependency,
	CodeLeaseLost, CodeWorkerPanic, CodeDeadlineExceeded, CodeCancelled,
	CodeWorkflowError, CodeInvalidInput, CodeShutdown, CodeResultTooLarge, CodeDependencyFailed, CodeRetried, CodeStaleLease,
}

// Known reports whether c is in the closed set.
func (c Code) Known() bool {
	for _, k := range Codes {
		if c == k {
			return true
		}
	}
	return false
}
