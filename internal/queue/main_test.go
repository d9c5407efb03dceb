package queue

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine running: every
// pool, scheduler and worker must stop with the service.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
