// Package httpapitest starts Docket's real HTTP stack in-process for tests
// and examples: a SQLite store in a temporary folder, the queue service with
// the demo workflows on the real runtime, API-key authentication and the
// httpapi handler behind an httptest.Server.
//
//	stack := httpapitest.New(t, httpapitest.Options{})
//	req, _ := http.NewRequest("GET", stack.URL+"/v1/tasks", nil)
//	req.Header.Set("Authorization", "Bearer "+stack.Key)
//
// ForEachDatabase runs a test on SQLite and, when DOCKET_TEST_POSTGRES_URL
// is set, on PostgreSQL; Database.Open gives each stack (each "node") its
// own handle on the same database:
//
//	httpapitest.ForEachDatabase(t, func(t *testing.T, db httpapitest.Database) {
//		a := httpapitest.New(t, httpapitest.Options{Store: db.Open(t)})
//		b := httpapitest.New(t, httpapitest.Options{Store: db.Open(t)})
//		…
//	})
//
// With Options.WrapStore and a faultstore.Store, FailTasks and FailKeys
// simulate an outage of the API's task calls or of key lookups while the
// pools and schedulers keep working.
package httpapitest
