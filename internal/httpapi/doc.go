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
// The handler logs one access line per request (method — OTHER when it is
// not a standard one —, route pattern, status, duration, trace ID, tenant,
// error code) and counts and times requests by route and status. It never
// logs bodies, query strings, headers, keys or error text.
//
// Routes under /v1/admin/ need a key with role admin: any other key is 403
// forbidden there, whatever the path or method. With Options.Admin set they
// list tenants (GET /v1/admin/tenants) and change their limits (PATCH
// /v1/admin/tenants/{id}), create keys (POST /v1/admin/keys: the key is
// shown in that answer only), list them without secrets (GET
// /v1/admin/keys?tenant=) and revoke them (POST
// /v1/admin/keys/{id}/revoke: refused at once by this node, which drops
// the key from its Authenticator's cache when it has one, and by other
// nodes when their cache entry expires), list the published rule set
// versions (GET /v1/admin/rules) and count the tasks every node finished
// per time bucket of a recent window, from the task history (GET
// /v1/admin/stats/throughput); with Options.Node too, GET /v1/admin/stats
// reports pools, tenants and this node's schedulers.
//
// Without a key: GET /openapi.json serves openapi.json, the hand-written
// OpenAPI 3.1 document of every route (tests hold it to the route table and
// validate real requests and answers against it), and GET /ui serves the
// operator dashboard (package dashboard), which signs in with a key.
//
// Serve the handler with NewServer (header, write and idle timeouts) on a
// ConnLimiter attached to it (a cap on open connections, and per remote
// address; near the cap, idle and silent connections give their slot to
// new ones). Request bodies share a budget of Options.MaxBodyMemory bytes.
//
//	h := httpapi.New(svc, auth.NewAuthenticator(st), httpapi.Options{
//		Logger:  logger,
//		Metrics: svc.Metrics(),
//		Admin:   st,  // the admin API: tenants, keys, stats
//		Node:    svc, // this node's workers and schedulers in the stats
//	})
//	srv := httpapi.NewServer(h, nil)
//	ln, _ := net.Listen("tcp", "127.0.0.1:8080")
//	lim := httpapi.NewConnLimiter(ln, httpapi.ConnLimits{Open: svc.Metrics().HTTPConnections})
//	lim.Attach(srv)
//	err := srv.Serve(lim)
//
// POST /v1/tasks/batch takes up to MaxBatchItems tasks in one body (bounded
// by Options.MaxBatchBodyBytes, each task by MaxBodyBytes) and answers 200
// with one result per task, each with the status a single submission would
// have had.
//
// A request body must arrive within Options.BodyTimeout; an answer given
// before the body was read closes the connection. A long poll
// (GET /v1/tasks/{id}?wait=60s) holds a request for up to MaxWait, and the
// long polls held at once are capped per tenant and in total
// (Options.MaxWaits, Options.MaxWaitsPerTenant).
package httpapi
