package queue

import (
	"os/exec"
	"strings"
	"testing"
)

// TestArchitectureQueueImportsNoQualityCode checks R9 and the ADR: the
// queue core (and the stores it depends on) import neither the quality
// rules nor any workflow implementation; they reach work only through the
// Runtime interface.
func TestArchitectureQueueImportsNoQualityCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	const module = "github.com/docket-dev/docket/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}",
		module+"internal/queue", module+"internal/store/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		module + "internal/quality",
		module + "internal/demo",
		module + "internal/runtime",
		module + "internal/httpapi",
		module + "workflow",
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
	// The check can fail: the runtime adapter does import workflow code.
	out, err = exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"internal/runtime").CombinedOutput()
	if err != nil || !strings.Contains(string(out), module+"workflow\n") {
		t.Fatalf("sanity check: internal/runtime should depend on workflow (%v)", err)
	}
}
