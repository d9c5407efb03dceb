package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// gateBackend is a one-writer backend whose transactions record the steps
// they run and which serves the gates from two views: the counts as
// committed when read without a lock, and the counts under the locks. A
// difference between them is an admission of another node that committed
// between the two.
type gateBackend struct {
	Backend // only Write is served
	read    int64
	locked  int64
	steps   [][]string // per transaction, the steps it ran
	tasks   []string   // tasks of committed transactions
}

func (b *gateBackend) Write(_ context.Context, _ string, fn func(tx Tx) error) error {
	tx := &gateTx{b: b}
	err := fn(tx)
	b.steps = append(b.steps, tx.steps)
	if err == nil {
		b.tasks = append(b.tasks, tx.tasks...)
	}
	return err
}

// gateTx serves the steps an admission of new keys takes.
type gateTx struct {
	Tx
	b     *gateBackend
	steps []string
	tasks []string
}

var _ GateReader = (*gateTx)(nil)

func (t *gateTx) step(s string) { t.steps = append(t.steps, s) }

func (t *gateTx) Bindings([]TenantKey) (map[TenantKey]Binding, error) {
	t.step("Bindings")
	return nil, nil
}

func (t *gateTx) EnsureTenants([]string, int, time.Time) error { t.step("EnsureTenants"); return nil }

func (t *gateTx) ReadGates(pools []dockettype.Pool, _ []string) (*Gates, error) {
	t.step("ReadGates")
	return gates(pools, t.b.read), nil
}

func (t *gateTx) LockGates(pools []dockettype.Pool, _ []string) (*Gates, error) {
	t.step("LockGates")
	return gates(pools, t.b.locked), nil
}

func gates(pools []dockettype.Pool, n int64) *Gates {
	g := &Gates{Pools: map[dockettype.Pool]int64{}, Tenants: map[string]TenantGate{}}
	for _, p := range pools {
		g.Pools[p] = n
	}
	return g
}

func (t *gateTx) InsertBindings(rows []Binding, _ time.Time) (map[TenantKey]bool, error) {
	t.step("InsertBindings")
	out := map[TenantKey]bool{}
	for _, r := range rows {
		out[r.TenantKey] = true
	}
	return out, nil
}

func (t *gateTx) InsertTasks(items []*store.AdmitItem, _ map[string]bool, _ time.Time) error {
	t.step("InsertTasks")
	for _, it := range items {
		t.tasks = append(t.tasks, it.TaskID)
	}
	return nil
}

func (t *gateTx) InsertEvents([]Event, time.Time) error { t.step("InsertEvents"); return nil }

func (t *gateTx) AddInFlight([]CounterDelta, bool) error { t.step("AddInFlight"); return nil }

func (t *gateTx) AddQueued([]QueueDelta) error { t.step("AddQueued"); return nil }

func (t *gateTx) Notify([]store.Queue, []string) error { t.step("Notify"); return nil }

func admitTwo(t *testing.T, b *gateBackend, capacity int) []store.AdmitResult {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var items []*store.AdmitItem
	for _, id := range []string{"t1", "t2"} {
		items = append(items, &store.AdmitItem{TaskID: id, Tenant: "acme", IdempotencyKey: "k-" + id, RequestHash: "h",
			Workflow: "demo.echo", Pool: dockettype.PoolOnline, MaxAttempts: 1, DeadlineAt: now.Add(time.Hour),
			PoolCapacity: capacity})
	}
	res, err := New(b).Admit(t.Context(), &store.AdmitParams{Now: now, Items: items})
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return res
}

func outcomes(res []store.AdmitResult) []store.AdmitOutcome {
	var out []store.AdmitOutcome
	for _, r := range res {
		out = append(out, r.Outcome)
	}
	return out
}

// On a backend with concurrent writers, an admission writes its bindings
// and tasks before it locks the gates, and its history after (event IDs
// follow the gates' order): what admissions to one pool serialize on is the
// counters, the history and the commit, not the task inserts.
func TestAdmitLocksGatesAfterWritingRows(t *testing.T) {
	b := &gateBackend{read: 0, locked: 0}
	res := admitTwo(t, b, 10)
	if got := outcomes(res); !slices.Equal(got, []store.AdmitOutcome{store.Admitted, store.Admitted}) {
		t.Fatalf("outcomes = %v, want both admitted", got)
	}
	want := []string{"Bindings", "EnsureTenants", "ReadGates", "InsertBindings", "InsertTasks",
		"LockGates", "AddInFlight", "AddQueued", "InsertEvents", "Notify"}
	if len(b.steps) != 1 || !slices.Equal(b.steps[0], want) {
		t.Fatalf("steps = %v, want one transaction running %v", b.steps, want)
	}
	if !slices.Equal(b.tasks, []string{"t1", "t2"}) {
		t.Errorf("committed tasks = %v, want t1 and t2", b.tasks)
	}
}

// When another admission took the room between the unlocked read and the
// locks, the transaction is abandoned (nothing of it commits) and run again
// deciding under the locks: capacity is never exceeded.
func TestAdmitDecidesAgainUnderLocksWhenGatesMoved(t *testing.T) {
	b := &gateBackend{read: 0, locked: 1} // capacity 2; another admission took one place meanwhile
	res := admitTwo(t, b, 2)
	if got := outcomes(res); !slices.Equal(got, []store.AdmitOutcome{store.Admitted, store.QueueFull}) {
		t.Fatalf("outcomes = %v, want the first admitted and the second refused (queue full)", got)
	}
	if len(b.steps) != 2 {
		t.Fatalf("ran %d transactions, want 2 (the optimistic one abandoned)", len(b.steps))
	}
	again := b.steps[1]
	lock, bind := slices.Index(again, "LockGates"), slices.Index(again, "InsertBindings")
	if lock < 0 || bind < 0 || lock > bind || slices.Contains(again, "ReadGates") {
		t.Errorf("second transaction ran %v, want the gates locked before anything is written", again)
	}
	if !slices.Equal(b.tasks, []string{"t1"}) {
		t.Errorf("committed tasks = %v, want only t1", b.tasks)
	}
}

// A batch that the counts under the locks still admit in full commits in
// one transaction even when the counts moved.
func TestAdmitKeepsDecisionsThatStillFit(t *testing.T) {
	b := &gateBackend{read: 0, locked: 3}
	res := admitTwo(t, b, 5)
	if got := outcomes(res); !slices.Equal(got, []store.AdmitOutcome{store.Admitted, store.Admitted}) {
		t.Fatalf("outcomes = %v, want both admitted", got)
	}
	if len(b.steps) != 1 {
		t.Fatalf("ran %d transactions, want 1", len(b.steps))
	}
}
