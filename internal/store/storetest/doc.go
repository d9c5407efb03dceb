// Package storetest is the conformance suite every store backend runs, so
// that SQLite and PostgreSQL keep exactly the semantics the queue core relies
// on: idempotent admission, bounded capacity, fair claims, fenced writes,
// recovery, deadlines, cancellation and tenant-scoped reads.
//
// A backend's test file calls Run with a function that returns a fresh,
// empty, migrated store for one subtest:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "docket.db"), sqlite.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Change semantics here first, then in the backends.
package storetest
