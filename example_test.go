package docket_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket-dev/docket"
	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/workflow"
)

// Register your own workflow and run Docket in-process.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "docket-example")
	defer os.RemoveAll(dir)

	reg := workflow.NewRegistry()
	err := reg.Register("greet.upper", workflow.Definition{
		Pool: dockettype.PoolOnline,
		Run: func(ctx context.Context, b *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
			var in struct{ Name string }
			if err := json.Unmarshal(input, &in); err != nil {
				return nil, workflow.Fail(dockettype.CodeInvalidInput, `input needs a "name" string`, false)
			}
			// The binding is built by the server: the author is the API
			// key's principal, whatever the request said.
			return json.Marshal(map[string]string{"greeting": "HELLO " + strings.ToUpper(in.Name), "by": b.Author()})
		},
	})
	if err != nil {
		panic(err)
	}
	srv, err := docket.New(ctx, docket.Config{
		DB:        filepath.Join(dir, "docket.db"),
		Listen:    "127.0.0.1:0",
		Workflows: reg,
		Logger:    slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	key, err := srv.Bootstrap(ctx) // tenant "demo", principal "demo"
	if err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())

	c := client.New(srv.URL(), key)
	res, err := c.Submit(ctx, &client.SubmitParams{
		IdempotencyKey: "greet-1", Workflow: "greet.upper", Input: json.RawMessage(`{"name":"ada"}`),
	})
	if err != nil {
		panic(err)
	}
	task, err := c.Wait(ctx, res.Task.ID, 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, string(task.Result))
	// Output: succeeded {"by":"demo","greeting":"HELLO ADA"}
}
