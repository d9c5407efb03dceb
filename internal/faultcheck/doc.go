// Package faultcheck is `docket faultcheck`: a fault checker in the manner
// of Jepsen, shipped with the product.
//
// A run starts servers of the docket binary as child processes (Node), each
// on a free loopback port with the hidden serve flag --faultcheck-probe, so
// that they run the probe workflow (RegisterProbe), which logs every
// execution outside the database. A load of client processes (the public
// client package, over real HTTP) records every call in a History —
// invoked, then ok, failed or indeterminate, with key and task ID — while a
// Scenario injects faults: SIGKILL and restarts, PostgreSQL stopped with -m
// immediate, connections reset and stalled by a TCPProxy, committed answers
// dropped by a ResponseDropper, servers frozen with SIGSTOP, a node whose
// clock runs ahead, rolling restarts with SIGTERM. Each scenario is a file,
// scenario_<name>.go, listed once in scenarios; the rig runs the rest the
// same way for all. Then the faults are healed, the tasks drained, every key
// replayed, and Check judges the history, the execution logs and the
// servers' logs against the database as the store contract and the HTTP API
// read it (Snapshot).
//
// Check parses its input once and runs one pass per invariant over it, each
// in a file check_<invariant>.go. It is pure: its tests feed it fabricated
// histories and databases with a lost task, a duplicate, an overwritten
// terminal state, an outcome lost at shutdown and the rest, and assert that
// each is reported.
package faultcheck
