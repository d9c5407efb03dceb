package logtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running. (Guard
// is not used on the package that defines it: its tests log bad lines on
// purpose.)
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
