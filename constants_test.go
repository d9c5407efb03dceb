package docket_test

import (
	"testing"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/internal/defaults"
	"github.com/docket-dev/docket/internal/node"
)

// The public constants spell the values the node reads (they are written
// out, not aliased, so that go doc shows them).
func TestConstantsAreTheNodes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"Unlimited", docket.Unlimited, defaults.Unlimited},
		{"NoWorkers", docket.NoWorkers, defaults.NoWorkers},
		{"ModeDemo", docket.ModeDemo, node.ModeDemo},
		{"ModePilot", docket.ModePilot, node.ModePilot},
		{"the default mode", docket.ModeDemo, defaults.Mode},
	} {
		if tt.got != tt.want {
			t.Errorf("docket.%s = %v, the node's %v", tt.name, tt.got, tt.want)
		}
	}
}
