package dockettype

// Code is a stable error code. One closed set is used alike in API answers,
// a task's error.code, metric labels and logs. Extend it deliberately and
// document each new code in the README.
type Code string

const (
	CodeUnauthenticated     Code = "unauthenticated"       // 401: no key, unknown key, revoked key
	CodeForbidden           Code = "forbidden"             // 403: the key's role may not do this
	CodeInvalidRequest      Code = "invalid_request"       // 400: malformed JSON, unknown field, bad header or parameter
	CodeUnknownWorkflow     Code = "unknown_workflow"      // 400: the workflow is not registered in this mode
	CodePayloadTooLarge     Code = "payload_too_large"     // 413: body over the limit
	CodeNotFound            Code = "not_found"             // 404: no such task for this tenant
	CodeMethodNotAllowed    Code = "method_not_allowed"    // 405: the route does not serve this method (see the Allow header)
	CodeIdempotencyConflict Code = "idempotency_conflict"  // 409: key reused with a different request
	CodeBuiltinWorkflow     Code = "builtin_workflow"      // 409: the name is a workflow compiled into the server (it cannot be registered or removed as a remote one)
	CodeQueueFull           Code = "queue_full"            // 429: the pool's capacity is reached
	CodeTenantQuotaExceeded Code = "tenant_quota_exceeded" // 429: the tenant's in-flight limit is reached
	CodeTooManyRequests     Code = "too_many_requests"     // 429: too many concurrent long polls, for the tenant or the server; every connection of the store in use; too many request bodies being read at once, or connections from one address
	CodeStoreUnavailable    Code = "store_unavailable"     // 503: the database cannot be reached
	CodeInternal            Code = "internal"              // 500: an unexpected server fault (logged by code only)

	CodeLeaseLost        Code = "lease_lost"        // task: attempts exhausted after lease expiries
	CodeWorkerPanic      Code = "worker_panic"      // task: the workflow panicked
	CodeDeadlineExceeded Code = "deadline_exceeded" // task: the task timed out
	CodeCancelled        Code = "cancelled"         // task: cancelled by a client
	CodeWorkflowError    Code = "workflow_error"    // task: the workflow returned an unclassified error
	CodeInvalidInput     Code = "invalid_input"     // task: the workflow refused its input
	CodeShutdown         Code = "shutdown"          // task: the node stopped before the task finished
	CodeResultTooLarge   Code = "result_too_large"  // task: the workflow's result is over the server's limit

	CodeStaleLease Code = "stale_lease" // internal, metric: a fenced write was refused
)

// Codes lists the closed set, in documentation order.
var Codes = []Code{
	CodeUnauthenticated, CodeForbidden, CodeInvalidRequest, CodeUnknownWorkflow,
	CodePayloadTooLarge, CodeNotFound, CodeMethodNotAllowed, CodeIdempotencyConflict, CodeBuiltinWorkflow, CodeQueueFull,
	CodeTenantQuotaExceeded, CodeTooManyRequests, CodeStoreUnavailable, CodeInternal,
	CodeLeaseLost, CodeWorkerPanic, CodeDeadlineExceeded, CodeCancelled,
	CodeWorkflowError, CodeInvalidInput, CodeShutdown, CodeResultTooLarge, CodeStaleLease,
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
