package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/httpapi/httpapitest"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

func TestSubmitBatch(t *testing.T) {
	t.Parallel()
	s := httpapitest.New(t, httpapitest.Options{Queue: queue.Config{
		Online: queue.PoolConfig{Workers: -1, Capacity: 3}, RetryAfter: 2 * time.Second,
	}})
	ctx := context.Background()
	c := client.New(s.URL, s.Key)
	earlier, err := c.Submit(ctx, &client.SubmitParams{IdempotencyKey: "earlier", Workflow: "demo.echo", Input: canaryInput})
	if err != nil {
		t.Fatal(err)
	}

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	res, err := c.SubmitBatch(ctx, &client.SubmitBatchParams{
		TraceParent: "00-" + traceID + "-00f067aa0ba902b7-01",
		Tasks: []*client.SubmitParams{
			{IdempotencyKey: "a", Workflow: "demo.echo", Input: canaryInput, Priority: 4},             // 201
			{IdempotencyKey: "earlier", Workflow: "demo.echo", Input: canaryInput},                    // 200
			{IdempotencyKey: "earlier", Workflow: "demo.echo", Input: json.RawMessage(`{"msg":"x"}`)}, // 409
			{IdempotencyKey: "b", Workflow: "demo.nope"},                                              // 400
			{IdempotencyKey: "c", Workflow: "demo.echo", Pool: dockettype.PoolOffline},                // 201: another pool
			{IdempotencyKey: "d", Workflow: "demo.echo", MaxAttempts: 2},                              // 201: the online pool's third
			{IdempotencyKey: "e", Workflow: "demo.echo"},                                              // 429 queue_full
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status int
		code   dockettype.Code
	}{
		{201, ""}, {200, ""}, {409, dockettype.CodeIdempotencyConflict}, {400, dockettype.CodeUnknownWorkflow},
		{201, ""}, {201, ""}, {429, dockettype.CodeQueueFull},
	}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d", len(res), len(want))
	}
	for i, w := range want {
		r := res[i]
		if r.Status != w.status {
			t.Errorf("task %d: status %d, want %d (%+v)", i, r.Status, w.status, r.Err)
			continue
		}
		if w.code != "" {
			if r.Task != nil || r.Err == nil || r.Err.StatusCode != w.status || r.Err.Code != string(w.code) || r.Err.TraceID != traceID ||
				!client.IsCode(r.Err, w.code) {
				t.Errorf("task %d: %+v, want error %s", i, r.Err, w.code)
			}
			continue
		}
		if r.Err != nil || r.Task == nil || r.Replayed != (w.status == 200) || r.Task.Tenant != "acme" || r.Task.Author != "alice" {
			t.Errorf("task %d: %+v, want a task of acme/alice", i, r)
		}
	}
	if res[1].Task.ID != earlier.Task.ID {
		t.Errorf("replay answers %s, want %s", res[1].Task.ID, earlier.Task.ID)
	}
	if res[0].Task.TraceID != traceID || res[0].Task.Priority != 4 || res[4].Task.Pool != dockettype.PoolOffline || res[5].Task.MaxAttempts != 2 {
		t.Errorf("tasks do not carry their parameters: %+v %+v %+v", res[0].Task, res[4].Task, res[5].Task)
	}
	if res[6].Err.RetryAfter != 2*time.Second {
		t.Errorf("queue_full RetryAfter = %s, want 2s", res[6].Err.RetryAfter)
	}
	got, err := c.Get(ctx, res[0].Task.ID)
	if err != nil || got.ID != res[0].Task.ID {
		t.Fatalf("get the batch's task: %+v, %v", got, err)
	}

	// Another tenant's batch with the same keys makes its own tasks.
	globex, err := s.NewKey(ctx, "globex", "bob")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := client.New(s.URL, globex).SubmitBatch(ctx, &client.SubmitBatchParams{Tasks: []*client.SubmitParams{
		{IdempotencyKey: "a", Workflow: "demo.echo", Input: canaryInput, Pool: dockettype.PoolOffline, Priority: 4},
	}})
	if err != nil || theirs[0].Status != 201 || theirs[0].Task.ID == res[0].Task.ID || theirs[0].Task.Tenant != "globex" {
		t.Fatalf("globex batch = %+v, %v", theirs, err)
	}
	_, err = c.Get(ctx, theirs[0].Task.ID)
	wantCode(t, err, http.StatusNotFound, dockettype.CodeNotFound)
}

func TestSubmitBatchLimits(t *testing.T) {
	t.Parallel()
	// Admitting 1,000 tasks at once can take longer than the default query
	// timeout on a loaded machine under -race (503 store_unavailable, 3 of
	// 10 runs beside seven other test streams); the limits are the point
	// here, not the latency.
	cfg := queuedOnly
	cfg.QueryTimeout = time.Minute
	s := httpapitest.New(t, httpapitest.Options{Queue: cfg})
	ctx := context.Background()
	c := client.New(s.URL, s.Key)
	tasks := func(n int) []*client.SubmitParams {
		out := make([]*client.SubmitParams, n)
		for i := range out {
			out[i] = &client.SubmitParams{IdempotencyKey: fmt.Sprintf("k-%d", i), Workflow: "demo.echo", Input: json.RawMessage(fmt.Sprint(i))}
		}
		return out
	}
	_, err := c.SubmitBatch(ctx, &client.SubmitBatchParams{Tasks: tasks(client.MaxBatchItems + 1)})
	wantCode(t, err, http.StatusBadRequest, dockettype.CodeInvalidRequest)
	_, err = c.SubmitBatch(ctx, &client.SubmitBatchParams{})
	wantCode(t, err, http.StatusBadRequest, dockettype.CodeInvalidRequest)

	res, err := c.SubmitBatch(ctx, &client.SubmitBatchParams{Tasks: tasks(client.MaxBatchItems)})
	if err != nil || len(res) != client.MaxBatchItems {
		t.Fatalf("batch of %d: %d results, %v", client.MaxBatchItems, len(res), err)
	}
	for i, r := range res {
		if r.Status != 201 || r.Task.ID == "" {
			t.Fatalf("task %d: %+v", i, r)
		}
	}

	// Mistakes the client catches before sending.
	if _, err := c.SubmitBatch(ctx, nil); err == nil {
		t.Error("nil params accepted")
	}
	if _, err := c.SubmitBatch(ctx, &client.SubmitBatchParams{Tasks: []*client.SubmitParams{nil}}); err == nil {
		t.Error("a nil task accepted")
	}
	if _, err := c.SubmitBatch(ctx, &client.SubmitBatchParams{Tasks: []*client.SubmitParams{
		{IdempotencyKey: "t", Workflow: "demo.echo", TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	}}); err == nil {
		t.Error("a task's own TraceParent accepted")
	}
}

func TestSubmitBatchStoreUnavailable(t *testing.T) {
	t.Parallel()
	var fs *faultstore.Store
	s := httpapitest.New(t, httpapitest.Options{Queue: queuedOnly, WrapStore: func(st store.Store) store.Store {
		fs = faultstore.New(st)
		return fs
	}})
	ctx := context.Background()
	c := client.New(s.URL, s.Key)
	batch := &client.SubmitBatchParams{Tasks: []*client.SubmitParams{
		{IdempotencyKey: "a", Workflow: "demo.echo", Input: canaryInput},
		{IdempotencyKey: "b", Workflow: "demo.echo"},
	}}
	fs.Set("admit", faultstore.Fail(store.ErrUnavailable))
	_, err := c.SubmitBatch(ctx, batch)
	wantCode(t, err, http.StatusServiceUnavailable, dockettype.CodeStoreUnavailable)
	// Nothing was admitted: the retry admits both.
	fs.Clear()
	res, err := c.SubmitBatch(ctx, batch)
	if err != nil || res[0].Status != 201 || res[1].Status != 201 {
		t.Fatalf("retry = %+v, %v", res, err)
	}
}
