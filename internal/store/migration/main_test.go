package migration

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/docket-dev/docket/internal/logtest"
)

// TestMain fails the package if a test leaves a goroutine running, and
// checks every line the default logger receives while the tests run: no
// payload, no SQL text.
func TestMain(m *testing.M) { goleak.VerifyTestMain(logtest.Guard(m)) }
