package docket_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/workflow"
)

// An in-process workflow reads its dependencies' results through its
// binding (fan-in): the join sums what its two dependencies returned.
func TestInProcessDependencyResults(t *testing.T) {
	t.Parallel()
	reg := workflow.NewRegistry()
	if err := reg.Register("sum.join", workflow.Definition{
		Pool: dockettype.PoolOnline,
		Run: func(ctx context.Context, b *workflow.Binding, _ json.RawMessage) (json.RawMessage, error) {
			deps, err := b.DependencyResults(ctx)
			if err != nil {
				return nil, err
			}
			total := 0
			for _, d := range deps {
				var n int
				if d.State != dockettype.StateSucceeded || json.Unmarshal(d.Result, &n) != nil {
					return nil, workflow.Fail("bad_dependency", "a dependency did not succeed with a number", false)
				}
				total += n
			}
			if _, err := b.DependencyResult(ctx, "not-one"); !errors.Is(err, dockettype.ErrNotDependency) {
				return nil, workflow.Fail("bad_lookup", "DependencyResult of a non-dependency did not say so", false)
			}
			return json.Marshal(map[string]int{"total": total, "inputs": len(deps)})
		},
	}); err != nil {
		t.Fatal(err)
	}
	logger, _ := logtest.New(t)
	srv, err := docket.New(context.Background(), docket.Config{DB: filepath.Join(t.TempDir(), "docket.db"),
		Listen: "127.0.0.1:0", Workflows: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	key, err := srv.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c := client.New(srv.URL(), key)
	res, err := c.SubmitBatch(context.Background(), &client.SubmitBatchParams{Tasks: []*client.SubmitParams{
		{IdempotencyKey: "two", Workflow: "demo.echo", Input: json.RawMessage(`2`)},
		{IdempotencyKey: "forty", Workflow: "demo.echo", Input: json.RawMessage(`40`)},
		{IdempotencyKey: "sum", Workflow: "sum.join", DependsOn: []string{"two", "forty"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Wait(context.Background(), res[2].Task.ID, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != dockettype.StateSucceeded || string(got.Result) != `{"inputs":2,"total":42}` {
		t.Fatalf("join = %s %s %+v, want succeeded with total 42", got.State, got.Result, got.Error)
	}
}

// A binding the server did not make cannot read dependencies.
func TestZeroBindingHasNoDependencies(t *testing.T) {
	var b workflow.Binding
	if _, err := b.DependencyResults(context.Background()); !errors.Is(err, dockettype.ErrNoDependencySource) {
		t.Errorf("DependencyResults on a zero binding: %v, want ErrNoDependencySource", err)
	}
}
