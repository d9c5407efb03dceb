package sqlite

import "time"

// ms is a time as the tables keep it: milliseconds since the epoch.
func ms(t time.Time) int64 { return t.UnixMilli() }
