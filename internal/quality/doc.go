// Package quality evaluates text against versioned quality rule sets and
// plugs into Docket as the registered workflow "quality.evaluate".
//
// A rule set is a small JSON document (see Parse for the format) that an
// operator publishes with `docket rules publish`. Published versions are
// immutable: each task pins the version it was admitted with, so a task
// admitted under v1 is judged by v1's rules even after v2 is published.
// Demo mode uses frozen seed rules built into the binary instead (Seed).
//
// The queue core never imports this package (it reaches work only through
// its Runtime interface); the node wires it in by registering the workflow
// with a Provider:
//
//	reg := workflow.NewRegistry()
//	if err := quality.Register(reg, quality.NewSeedProvider()); err != nil {
//		return err
//	}
//
// Rule results never quote the evaluated text, so evidence and anything
// derived from it stay free of payload fragments.
package quality
