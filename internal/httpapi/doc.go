// Package httpapi serves Docket's HTTP contract (v1) over an Executor (the
// queue's ExecutionService) and an Authenticator (API keys).
//
// Every /v1 route requires `Authorization: Bearer <key>`; the tenant and the
// author of a task always come from the authenticated principal, never from
// the request. Errors are `{"error":{"code","message","trace_id"}}` with a
// code from dockettype's closed set. Every response carries a W3C
// `traceparent` header whose trace ID is the request's (when it sent a valid
// one) or a new one.
//
// The handler logs one access line per request (method, route pattern,
// status, duration, trace ID, tenant, error code) and counts requests by
// route and status. It never logs bodies, query strings, headers, keys or
// error text.
//
//	h := httpapi.New(svc, auth.NewAuthenticator(st), httpapi.Options{
//		Logger:  logger,
//		Metrics: svc.Metrics(),
//	})
//	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: h, ReadHeaderTimeout: 10 * time.Second}
//
// POST /v1/tasks/batch takes up to MaxBatchItems tasks in one body (bounded
// by Options.MaxBatchBodyBytes, each task by MaxBodyBytes) and answers 200
// with one result per task, each with the status a single submission would
// have had.
//
// A long poll (GET /v1/tasks/{id}?wait=60s) holds a request for up to
// MaxWait, so a server's WriteTimeout must be longer than that.
package httpapi
