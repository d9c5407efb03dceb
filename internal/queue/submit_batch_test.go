package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/faultstore"
)

func TestSubmitBatchAnswersEachItem(t *testing.T) {
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) {
		c.Online = PoolConfig{Workers: -1, Capacity: 4} // tasks stay queued
	}).start()
	ctx := context.Background()
	limit := 3
	if _, err := h.store.UpdateTenant(ctx, &store.UpdateTenantParams{Now: baseTime, Tenant: "acme", MaxInFlight: &limit}); err != nil {
		t.Fatal(err)
	}
	earlier := h.submit(alice, "earlier", "test.echo", `{"n":0}`)
	adminCalls := fs.Calls("admit")

	req := func(key, input string) *SubmitRequest {
		return &SubmitRequest{IdempotencyKey: key, Workflow: "test.echo", Input: json.RawMessage(input)}
	}
	reqs := []*SubmitRequest{
		req("a", `{"n":1}`),                                          // 0: admitted
		{IdempotencyKey: "b", Workflow: "nope"},                      // 1: unknown workflow
		req("earlier", `{"n":0}`),                                    // 2: replay of the single submit
		req("earlier", `{"n":9}`),                                    // 3: conflict
		{IdempotencyKey: "c", Workflow: "test.echo", Priority: 5000}, // 4: invalid
		req("a", `{ "n" : 1 }`),                                      // 5: replay of item 0 (same request)
		req("d", `{"n":2}`),                                          // 6: admitted: acme now holds 3
		req("e", `{"n":3}`),                                          // 7: tenant limit
		nil,                                                          // 8: missing
		{IdempotencyKey: "", Workflow: "test.echo"},                  // 9: no key
	}
	res, err := h.svc.SubmitBatch(ctx, alice, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(reqs) {
		t.Fatalf("%d results for %d items", len(res), len(reqs))
	}
	want := []struct {
		code     dockettype.Code // "" when a task is expected
		replayed bool
	}{
		{}, {code: dockettype.CodeUnknownWorkflow}, {replayed: true}, {code: dockettype.CodeIdempotencyConflict},
		{code: dockettype.CodeInvalidRequest}, {replayed: true}, {}, {code: dockettype.CodeTenantQuotaExceeded},
		{code: dockettype.CodeInvalidRequest}, {code: dockettype.CodeInvalidRequest},
	}
	for i, w := range want {
		r := res[i]
		switch {
		case w.code != "":
			if r.Err == nil || r.Err.Code != w.code || r.Task != nil {
				t.Errorf("item %d = %+v (err %v), want %s", i, r, r.Err, w.code)
			}
		case r.Err != nil || r.Task == nil || r.Replayed != w.replayed:
			t.Errorf("item %d = %+v (err %v), want a task, replayed %v", i, r, r.Err, w.replayed)
		case r.Task.Tenant != "acme" || r.Task.Author != "alice":
			t.Errorf("item %d: task of %s/%s, want acme/alice", i, r.Task.Tenant, r.Task.Author)
		}
	}
	if res[2].Task.ID != earlier.ID || res[5].Task.ID != res[0].Task.ID || res[0].Task.ID == res[6].Task.ID {
		t.Errorf("replays point at the wrong tasks: %s %s %s %s", res[2].Task.ID, res[5].Task.ID, res[0].Task.ID, res[6].Task.ID)
	}
	if res[7].Err.RetryAfter <= 0 {
		t.Errorf("tenant_quota_exceeded without Retry-After")
	}
	if n := fs.Calls("admit") - adminCalls; n != 1 {
		t.Errorf("the batch called the store's Admit %d times, want once", n)
	}
	// Admitted items have their history; refused ones wrote nothing.
	for _, i := range []int{0, 6} {
		events, err := h.svc.Events(ctx, alice, res[i].Task.ID)
		if err != nil || len(events) != 1 || events[0].To != dockettype.StateQueued {
			t.Errorf("events of item %d = %+v, %v", i, events, err)
		}
	}
	// The refused item's key is free: using it with another body is no
	// idempotency conflict (a bound key would be).
	if again, err := h.svc.SubmitBatch(ctx, alice, []*SubmitRequest{req("e", `"another body"`)}); err != nil || again[0].Replayed ||
		again[0].Err != nil && again[0].Err.Code == dockettype.CodeIdempotencyConflict {
		t.Errorf("the refused item bound its key: %+v, %v", again, err)
	}

	// Pool capacity (4) is checked per item too: another tenant gets one
	// slot, then queue_full.
	globex := principal("globex", "bob")
	res, err = h.svc.SubmitBatch(ctx, globex, []*SubmitRequest{req("a", `1`), req("b", `2`)})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Task == nil || res[0].Task.Tenant != "globex" || res[1].Err == nil || res[1].Err.Code != dockettype.CodeQueueFull {
		t.Fatalf("globex batch = %+v, %+v", res[0], res[1])
	}
}

func TestSubmitBatchWholeCallErrors(t *testing.T) {
	var fs *faultstore.Store
	h := newHarness(t, withFaults(&fs), func(h *harness, c *Config) { c.Online.Workers = -1 }).start()
	ctx := context.Background()
	one := []*SubmitRequest{{IdempotencyKey: "k", Workflow: "test.echo"}}

	tooMany := make([]*SubmitRequest, MaxBatchItems+1)
	for i := range tooMany {
		tooMany[i] = &SubmitRequest{IdempotencyKey: fmt.Sprintf("k-%d", i), Workflow: "test.echo"}
	}
	for name, call := range map[string]func() error{
		"no items":     func() error { _, err := h.svc.SubmitBatch(ctx, alice, nil); return err },
		"too many":     func() error { _, err := h.svc.SubmitBatch(ctx, alice, tooMany); return err },
		"no principal": func() error { _, err := h.svc.SubmitBatch(ctx, dockettype.Principal{}, one); return err },
	} {
		err := call()
		want := dockettype.CodeInvalidRequest
		if name == "no principal" {
			want = dockettype.CodeUnauthenticated
		}
		if code := errorCode(t, err); code != want {
			t.Errorf("%s: %s, want %s", name, code, want)
		}
	}
	// MaxBatchItems is accepted, in one store call.
	calls := fs.Calls("admit")
	res, err := h.svc.SubmitBatch(ctx, alice, tooMany[:MaxBatchItems])
	if err != nil || len(res) != MaxBatchItems || res[MaxBatchItems-1].Task == nil {
		t.Fatalf("batch of %d: %d results, %v", MaxBatchItems, len(res), err)
	}
	if n := fs.Calls("admit") - calls; n != 1 {
		t.Errorf("%d store calls, want 1", n)
	}

	// A store failure refuses the whole batch, and nothing of it is admitted.
	fs.Set("admit", faultstore.Fail(store.ErrUnavailable))
	_, err = h.svc.SubmitBatch(ctx, alice, []*SubmitRequest{{IdempotencyKey: "x", Workflow: "test.echo"}, {IdempotencyKey: "y", Workflow: "test.echo"}})
	if code := errorCode(t, err); code != dockettype.CodeStoreUnavailable {
		t.Fatalf("store down: %s, want store_unavailable", code)
	}
	fs.Clear()
	// Neither key was bound: other bodies under them are no conflict.
	again, err := h.svc.SubmitBatch(ctx, alice, []*SubmitRequest{
		{IdempotencyKey: "x", Workflow: "test.echo", Input: json.RawMessage(`"other"`)},
		{IdempotencyKey: "y", Workflow: "test.echo", Input: json.RawMessage(`"other"`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again {
		if r.Replayed || r.Err != nil && r.Err.Code == dockettype.CodeIdempotencyConflict {
			t.Errorf("key %d was bound by a failed batch: %+v", i, r)
		}
	}
}
