package bench

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/docket-dev/docket/internal/logtest"
)

// TestMain fails the package on a leaked goroutine, and on a line the default
// logger received that Docket must never log (logtest.Guard).
func TestMain(m *testing.M) { goleak.VerifyTestMain(logtest.Guard(m)) }
