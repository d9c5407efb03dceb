// Package httpapitest starts Docket's real HTTP stack in-process for tests
// and examples: a SQLite store in a temporary folder, the queue service with
// the demo workflows on the real runtime, API-key authentication and the
// httpapi handler behind an httptest.Server.
//
//	stack := httpapitest.New(t, httpapitest.Options{})
//	req, _ := http.NewRequest("GET", stack.URL+"/v1/tasks", nil)
//	req.Header.Set("Authorization", "Bearer "+stack.Key)
//
// FaultStore wraps the store to simulate an outage of the API's reads and
// writes, or of key lookups, while the schedulers keep their own handles.
package httpapitest
