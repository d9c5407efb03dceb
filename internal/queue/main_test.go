package queue

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain makes the directory of the template database, runs the tests,
// and fails the package if any test leaves a goroutine running: every pool,
// scheduler and worker must stop with the service.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "docket-queue-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	templateDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}
