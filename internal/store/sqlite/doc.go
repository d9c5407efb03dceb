// Package sqlite is Docket's embedded store: a pure-Go SQLite database
// (modernc.org/sqlite) in WAL mode.
//
// SQLite allows one writer at a time. The store sends every write through a
// single connection behind a FIFO gate, so writers queue in arrival order
// instead of spinning on SQLITE_BUSY; reads run on a separate pool of
// read-only connections and never take the write lock. Each Fork gets its
// own read pool (its connection budget) and shares the writer.
//
//	s, err := sqlite.Open(ctx, "docket.db", sqlite.Options{})
//	if err != nil { … }
//	defer s.Close()
package sqlite
