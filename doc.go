// Package docket runs a Docket server in-process: the same node as `docket
// serve` (store, worker pools, schedulers, HTTP API), for programs that
// embed Docket as a Go library and register their own workflows.
//
//	reg := workflow.NewRegistry()
//	_ = reg.Register("invoice.render", workflow.Definition{Pool: dockettype.PoolOnline, Run: render})
//	srv, err := docket.New(ctx, docket.Config{DB: "docket.db", Listen: "127.0.0.1:8080", Workflows: reg})
//	if err != nil { … }
//	err = srv.Run(ctx) // serves until ctx is cancelled, then shuts down gracefully
//
// Every Config field left zero takes its default (the table `docket serve
// --help` shows); Unlimited lifts a limit and NoWorkers leaves a pool
// without workers on this node. NoDemoWorkflows drops the demo workflows.
// The client package talks to a server over HTTP; package workflow is how
// workflows are written.
package docket
