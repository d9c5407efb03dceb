package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// A node listening on the store hears, when the transactions commit, that
// work became ready in a pool and that tasks finished; a listener on
// another installation (schema) of the same database hears nothing.
func TestListenHearsReadyAndFinished(t *testing.T) {
	s := open(t)
	defer s.Close()
	other := open(t)
	defer other.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	notes := make(chan store.Notification, 16)
	strays := make(chan store.Notification, 16)
	done := make(chan struct{}, 2)
	go func() { s.Listen(ctx, func(n store.Notification) { notes <- n }); done <- struct{}{} }()
	go func() { other.Listen(ctx, func(n store.Notification) { strays <- n }); done <- struct{}{} }()

	// The listeners connect asynchronously: admit until one hears.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	item := func(key string) *store.AdmitItem {
		return &store.AdmitItem{TaskID: "task-" + key, Tenant: "acme", IdempotencyKey: key, RequestHash: "h",
			Workflow: "demo.echo", Pool: dockettype.PoolOffline, MaxAttempts: 1, DeadlineAt: now.Add(time.Hour)}
	}
	var heard store.Notification
	for i := 0; heard.Ready == ""; i++ {
		if _, err := s.Admit(ctx, &store.AdmitParams{Now: now, Items: []*store.AdmitItem{item(string(rune('a' + i)))}}); err != nil {
			t.Fatal(err)
		}
		select {
		case heard = <-notes:
		case <-time.After(200 * time.Millisecond):
		}
		if i > 50 {
			t.Fatal("no notification within 50 admissions")
		}
	}
	if heard.Ready != store.PoolQueue(dockettype.PoolOffline) {
		t.Fatalf("heard %+v, want ready in the offline pool", heard)
	}

	claimed, err := s.Claim(ctx, &store.ClaimParams{Now: now, Queue: store.PoolQueue(dockettype.PoolOffline), Owner: "n", Limit: 100, LeaseTTL: time.Minute})
	if err != nil || len(claimed) == 0 {
		t.Fatalf("Claim: %v, %v", claimed, err)
	}
	var items []store.FinishItem
	var want []string
	for _, c := range claimed {
		items = append(items, store.FinishItem{Lease: c.Lease(), Kind: store.FinishSucceed})
		want = append(want, c.Task.ID)
	}
	if _, err := s.Finish(ctx, &store.FinishParams{Now: now, Items: items}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < len(want) {
		select {
		case n := <-notes:
			got = append(got, n.Finished...)
		case <-time.After(10 * time.Second):
			t.Fatalf("heard finished %v, want %v", got, want)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("heard finished %v, want %v", got, want)
	}
	select {
	case n := <-strays:
		t.Fatalf("another installation heard %+v", n)
	default:
	}
	cancel()
	<-done
	<-done
}

// A notification that cannot be sent (here a payload over PostgreSQL's
// limit: a task whose ID alone is longer) is dropped after its transaction
// has committed: the write stands, and the connection serves the next one.
func TestUnsendableNotificationLeavesTheWrite(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	long := "task-" + strings.Repeat("x", 8100)
	item := func(id string) *store.AdmitItem {
		return &store.AdmitItem{TaskID: id, Tenant: "acme", IdempotencyKey: id, RequestHash: "h",
			Workflow: "demo.echo", Pool: dockettype.PoolOffline, MaxAttempts: 1, DeadlineAt: now.Add(time.Hour)}
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Now: now, Items: []*store.AdmitItem{item(long)}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.Claim(ctx, &store.ClaimParams{Now: now, Queue: store.PoolQueue(dockettype.PoolOffline), Owner: "n", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("Claim: %v, %v", claimed, err)
	}
	// The finish's "done" notification names the task: too long to send.
	res, err := s.Finish(ctx, &store.FinishParams{Now: now, Items: []store.FinishItem{{Lease: claimed[0].Lease(), Kind: store.FinishSucceed}}})
	if err != nil || len(res) != 1 || !res[0].Applied {
		t.Fatalf("Finish = %+v, %v; want applied", res, err)
	}
	task, err := s.GetTask(ctx, &store.GetTaskParams{Tenant: "acme", TaskID: long})
	if err != nil || task.State != dockettype.StateSucceeded {
		t.Fatalf("GetTask = %v, %v; want succeeded", task, err)
	}
	for i := range 10 { // more writes than the pool has connections
		if _, err := s.Admit(ctx, &store.AdmitParams{Now: now, Items: []*store.AdmitItem{item(fmt.Sprintf("next-%d", i))}}); err != nil {
			t.Fatalf("Admit after the dropped notification: %v", err)
		}
	}
}
