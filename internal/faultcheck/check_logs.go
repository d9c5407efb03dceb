package faultcheck

import (
	"sort"
	"strings"
)

// logForbidden are what no server log line may carry: the payload canary,
// and fragments of SQL statements and database or driver error messages,
// which the faults provoke by the hundred.
var logForbidden = []string{
	LogCanary,
	"SELECT ", "INSERT ", "UPDATE ", "DELETE ", " WHERE ",
	"sqlite", "SQLITE", "SQLSTATE", "pgx", "pgconn", "syntax error", "constraint",
	"no such table", "database is locked", "connection refused", "duplicate key",
	"connection reset", "broken pipe", "unexpected EOF",
}

// checkLogs: no server log line leaks a payload, SQL text or a database
// error message.
func checkLogs(p *parsed, r *Result) {
	logs := p.in.Logs
	nodes := make([]string, 0, len(logs))
	for n := range logs {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		for _, line := range logs[n] {
			for _, f := range logForbidden {
				if strings.Contains(line, f) {
					if len(line) > 300 {
						line = line[:300] + "…"
					}
					r.flag(AnomalyLogLeak, "node %s logged %q: %s", n, f, line)
					break
				}
			}
		}
	}
}
