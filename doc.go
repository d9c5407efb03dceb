// Package docket runs a Docket server in-process: the same assembly as
// `docket serve` (store, runtime, ExecutionService, HTTP API), for users who
// embed Docket as a Go library and register their own workflows.
//
//	reg := workflow.NewRegistry()
//	_ = reg.Register("invoice.render", workflow.Definition{Pool: dockettype.PoolOnline, Run: render})
//	srv, err := docket.New(ctx, docket.Config{DB: "docket.db", Listen: "127.0.0.1:8080", Workflows: reg})
//	if err != nil { … }
//	err = srv.Run(ctx) // serves until ctx is cancelled, then shuts down gracefully
package docket
