// Package sqlite is Docket's embedded store: a pure-Go SQLite database
// (modernc.org/sqlite) in WAL mode.
//
// SQLite allows one writer at a time. The store admits one write
// transaction at a time through a gate, so writers queue instead of spinning
// on SQLITE_BUSY: in arrival order, except that a Background fork's writes
// (the offline pool) let waiting foreground writes go first, at most eight in
// a row. Write statements are prepared once and reused. Reads run on a
// separate pool of read-only connections and never take the write lock. Each
// Fork gets its own read pool (its connection budget) and shares the writer.
//
//	s, err := sqlite.Open(ctx, "docket.db", sqlite.Options{})
//	if err != nil { … }
//	defer s.Close()
package sqlite
