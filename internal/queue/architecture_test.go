package queue

import (
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestArchitectureQueueImportsNoQualityCode checks the rule the queue core
// is built on: the queue (and the stores it depends on) imports neither the
// quality rules, nor any workflow or its registry, nor a runtime, nor the
// HTTP layer or the node that wires them together, nor the OpenTelemetry
// SDK (its spans go through the API). Quality rules plug in
// as a registered workflow; the core reaches work only through its Runtime
// interface and persistence only through its Store interface.
func TestArchitectureQueueImportsNoQualityCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	t.Parallel()
	const module = "github.com/docket-dev/docket/"
	out, err := goListDeps(module+"internal/queue", module+"internal/store/...")
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		module + "internal/quality",
		module + "internal/demo",
		module + "internal/inprocess",
		module + "internal/httpapi",
		module + "internal/node",
		module + "workflow",
		// Tracing: the OpenTelemetry API only; the SDK and its exporters
		// are set up by the node (internal/tracing/otlp).
		module + "internal/tracing/otlp",
		"go.opentelemetry.io/otel/sdk",
		"go.opentelemetry.io/otel/exporters",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list returned only %v", deps)
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("the queue core depends on %s", dep)
			}
		}
	}
	// The check can fail: the in-process runtime does import workflow code.
	out, err = goListDeps(module + "internal/inprocess")
	if err != nil || !strings.Contains(string(out), module+"workflow\n") {
		t.Fatalf("sanity check: internal/inprocess should depend on workflow (%v)", err)
	}
	out, err = goListDeps(module + "internal/tracing/otlp")
	if err != nil || !strings.Contains(string(out), "go.opentelemetry.io/otel/sdk/trace\n") {
		t.Fatalf("sanity check: internal/tracing/otlp should depend on the SDK (%v)", err)
	}
}

// goListDeps runs go list -deps once per set of packages for the test
// binary (the answer cannot change while it runs; -count=N need not pay
// for N builds of the import graph).
func goListDeps(pkgs ...string) ([]byte, error) {
	key := strings.Join(pkgs, " ")
	depsMu.Lock()
	defer depsMu.Unlock()
	if r, ok := depsCache[key]; ok {
		return r.out, r.err
	}
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...).CombinedOutput()
	depsCache[key] = depsResult{out, err}
	return out, err
}

type depsResult struct {
	out []byte
	err error
}

var (
	depsMu    sync.Mutex
	depsCache = map[string]depsResult{}
)
