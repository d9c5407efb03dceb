// Package node assembles one Docket node: it fills the defaults of a
// Config, fits the connection cap to the open-file limit, opens the store,
// registers the workflows of the mode (quality.evaluate, and the demo
// workflows in demo mode), builds the in-process runtime, the
// ExecutionService with its pools and schedulers, the HTTP API and its
// metrics, and runs them. `docket serve` and the public docket package
// (for embedding programs) both start nodes here; nothing else wires the
// parts together.
//
//	n, err := node.New(ctx, node.Config{DB: "docket.db"}, node.Options{Version: docket.Version()})
//	if err != nil { … }
//	if err := n.Start(ctx); err != nil { … }
//	defer n.Stop()
//
// The files follow the assembly: config.go (settings, defaults and how they
// map onto the queue's and the API's), workflows.go (what each mode
// registers), node.go (construction and lifetime), queue_gauges.go (the
// metrics read from the store), max_connections.go with open_files_*.go,
// and clock_offset.go (the fault tests' skewed clock).
package node
