package runtime_test

import (
	"os"
	"testing"

	"github.com/docket-dev/docket/internal/logtest"
)

// TestMain checks every line the default logger receives while the tests
// run, as each test's own logger is checked: no payload, no SQL text.
func TestMain(m *testing.M) { os.Exit(logtest.Guard(m).Run()) }
