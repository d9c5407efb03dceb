package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/workflow"
)

// Register a workflow. Clients can then submit tasks naming
// "invoice.total"; Docket invokes Run with a Binding it built from the task.
func ExampleRegistry_Register() {
	reg := workflow.NewRegistry()
	err := reg.Register("invoice.total", workflow.Definition{
		Pool: dockettype.PoolOnline,
		Run: func(ctx context.Context, b *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
			var in struct{ Lines []float64 }
			if err := json.Unmarshal(input, &in); err != nil {
				// Not worth retrying: the input will not change.
				return nil, workflow.Fail(dockettype.CodeInvalidInput, `input needs a "lines" array of numbers`, false)
			}
			var sum float64
			for _, l := range in.Lines {
				sum += l
			}
			return json.Marshal(map[string]any{"total": sum, "tenant": b.Tenant()})
		},
	})
	fmt.Println(err, reg.Names())

	// A name can be registered once.
	err = reg.Register("invoice.total", workflow.Definition{Pool: dockettype.PoolOnline, Run: nil})
	fmt.Println(err != nil)
	// Output:
	// <nil> [invoice.total]
	// true
}
