package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
)

func Example() {
	ctx := context.Background()

	// An in-process Docket server (SQLite in a temporary folder, demo
	// workflows); in real use this is a running `docket serve`.
	dir, err := os.MkdirTemp("", "docket-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	server, err := httpapitest.Start(ctx, dir, slog.Default(), httpapitest.Options{})
	if err != nil {
		panic(err)
	}
	defer server.Close()

	c := client.New(server.URL, server.Key)

	params := &client.SubmitParams{
		IdempotencyKey: "greeting-1",
		Workflow:       "demo.echo",
		Input:          json.RawMessage(`{"hello": "world"}`),
	}
	res, err := c.Submit(ctx, params)
	if err != nil {
		panic(err)
	}
	fmt.Println("submitted:", res.Task.Workflow, "replayed:", res.Replayed)

	task, err := c.Wait(ctx, res.Task.ID, 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("state:", task.State, "result:", string(task.Result))

	// Retrying with the same key returns the same task.
	again, err := c.Submit(ctx, params)
	if err != nil {
		panic(err)
	}
	fmt.Println("same task:", again.Task.ID == res.Task.ID, "replayed:", again.Replayed)

	// Errors carry Docket's stable codes.
	_, err = c.Get(ctx, "no-such-task")
	fmt.Println("not found:", client.IsCode(err, dockettype.CodeNotFound))
	fmt.Println(err)

	// Output:
	// submitted: demo.echo replayed: false
	// state: succeeded result: {"hello":"world"}
	// same task: true replayed: true
	// not found: true
	// docket: not_found (HTTP 404): task not found
}
