// Package httpapitest starts Docket's real HTTP stack in-process for tests
// and examples: a SQLite store in a temporary folder (or Options.Store,
// e.g. PostgreSQL), the queue service with the demo workflows on the real
// runtime, API-key authentication and the httpapi handler behind an
// httptest.Server.
//
//	stack := httpapitest.New(t, httpapitest.Options{})
//	req, _ := http.NewRequest("GET", stack.URL+"/v1/tasks", nil)
//	req.Header.Set("Authorization", "Bearer "+stack.Key)
//
// With Options.WrapStore and a faultstore.Store, FailTasks and FailKeys
// simulate an outage of the API's task calls or of key lookups while the
// pools and schedulers keep working.
package httpapitest
