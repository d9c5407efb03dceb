package queue

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/internal/store"
)

// groupStore answers Admit with one result per item (the length of the
// item's task ID as its outcome, to check the split) and records each
// call's items. Calls
// wait on release once it is set, so that requests gather behind the
// first.
type groupStore struct {
	mu      sync.Mutex
	calls   [][]string
	entered chan struct{}
	release chan struct{}
	fail    error
}

func (g *groupStore) Admit(_ context.Context, p *store.AdmitParams) ([]store.AdmitResult, error) {
	ids := make([]string, len(p.Items))
	for i, it := range p.Items {
		ids[i] = it.TaskID
	}
	g.mu.Lock()
	g.calls = append(g.calls, ids)
	g.mu.Unlock()
	if g.entered != nil {
		g.entered <- struct{}{}
		<-g.release
	}
	if g.fail != nil {
		return nil, g.fail
	}
	out := make([]store.AdmitResult, len(p.Items))
	for i, it := range p.Items {
		out[i] = store.AdmitResult{Outcome: store.AdmitOutcome(len(it.TaskID))} // the item's own mark, to check the split
	}
	return out, nil
}

func items(ids ...string) []*store.AdmitItem {
	out := make([]*store.AdmitItem, len(ids))
	for i, id := range ids {
		out[i] = &store.AdmitItem{TaskID: id}
	}
	return out
}

// A group (a SubmitBatch's items) and single submissions that wait behind
// a commit go together in the next transaction, each group whole and in
// order, and each caller gets its own items' results back.
func TestAdmitterCommitsGroupsTogether(t *testing.T) {
	st := &groupStore{entered: make(chan struct{}), release: make(chan struct{})}
	a := newAdmitter(newBaseService(slog.New(slog.DiscardHandler), clockwork.NewFakeClock(), "admitter"), st, 8, 1, time.Minute)
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer a.Stop()

	// Requests go straight into the admitter's buffered queue, as admit
	// puts them, so that the test knows when they wait.
	enqueue := func(ids ...string) chan admitResponse {
		req := &admitRequest{ctx: t.Context(), items: items(ids...), done: make(chan admitResponse, 1)}
		a.in <- req
		return req.done
	}
	first := enqueue("a")
	<-st.entered // the first commit holds the loop
	group := enqueue("bb", "ccc", "dddd")
	single := enqueue("eeeee")
	st.release <- struct{}{}
	<-st.entered
	st.release <- struct{}{}
	for _, c := range []struct {
		ch   chan admitResponse
		want []store.AdmitOutcome
	}{{first, []store.AdmitOutcome{1}}, {group, []store.AdmitOutcome{2, 3, 4}}, {single, []store.AdmitOutcome{5}}} {
		got := <-c.ch
		if got.err != nil {
			t.Fatal(got.err)
		}
		var outcomes []store.AdmitOutcome
		for _, r := range got.res {
			outcomes = append(outcomes, r.Outcome)
		}
		if !slices.Equal(outcomes, c.want) {
			t.Errorf("results %v, want %v", outcomes, c.want)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if want := [][]string{{"a"}, {"bb", "ccc", "dddd", "eeeee"}}; !slices.EqualFunc(st.calls, want, slices.Equal) {
		t.Errorf("transactions %v, want %v (the group and the single together, in order)", st.calls, want)
	}
}

// A group larger than the batch limit is not split: it is one transaction,
// so that a store failure leaves nothing of it admitted.
func TestAdmitterNeverSplitsAGroup(t *testing.T) {
	outage := errors.New("outage")
	st := &groupStore{fail: outage}
	a := newAdmitter(newBaseService(slog.New(slog.DiscardHandler), clockwork.NewFakeClock(), "admitter"), st, 2, 1, time.Minute)
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	if _, err := a.admit(t.Context(), items("a", "b", "c", "d", "e")); !errors.Is(err, outage) {
		t.Fatalf("admit: %v, want the store's error", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.calls) != 1 || len(st.calls[0]) != 5 {
		t.Errorf("transactions %v, want one of 5 items", st.calls)
	}
}
