package postgres_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/postgres"
	"github.com/docket-dev/docket/internal/store/postgres/pgtest"
	"github.com/docket-dev/docket/internal/store/storetest"
)

// TestMain fails the package if a test leaves a goroutine running, and
// says in one line when the PostgreSQL tests (of every package) are
// skipped for want of a test database.
func TestMain(m *testing.M) {
	pgtest.SayWhenSkipped()
	goleak.VerifyTestMain(m)
}

// databaseURL returns the test database URL or skips the test.
func databaseURL(t *testing.T) string { return pgtest.URL(t) }

// freshSchema returns a schema no other test uses, dropped when t ends.
func freshSchema(t *testing.T, url string) string { return pgtest.Schema(t, url) }

// open opens a store in a fresh schema; the schema is created by Open.
func open(t *testing.T) *engine.Store {
	t.Helper()
	url := databaseURL(t)
	s, err := postgres.Open(t.Context(), url, postgres.Options{Schema: freshSchema(t, url)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	databaseURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

func TestBackend(t *testing.T) {
	storetest.RunBackend(t, func(t *testing.T) engine.Backend {
		url := databaseURL(t)
		b, err := postgres.OpenBackend(t.Context(), url, postgres.Options{Schema: freshSchema(t, url)})
		if err != nil {
			t.Fatalf("OpenBackend: %v", err)
		}
		return b
	})
}

// Docket's connections run without JIT (its statements are short; JIT
// compiling claims took 0.3–0.7 s each), unless the URL asks for it.
func TestConnectionsRunWithoutJIT(t *testing.T) {
	url := databaseURL(t)
	schema := freshSchema(t, url)
	for _, c := range []struct{ url, want string }{{url, "off"}, {withParam(url, "jit", "on"), "on"}} {
		b, err := postgres.OpenBackend(t.Context(), c.url, postgres.Options{Schema: schema})
		if err != nil {
			t.Fatalf("OpenBackend: %v", err)
		}
		got, err := postgres.Setting(t, b, "jit")
		b.Close()
		if err != nil || got != c.want {
			t.Errorf("jit = %q, %v; want %q", got, err, c.want)
		}
	}
}

// withParam adds a query parameter to a database URL.
func withParam(url, name, value string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + name + "=" + value
}

// The schema itself refuses to change a task's input (R3), even for a
// client that bypasses the store.
func TestInputIsImmutable(t *testing.T) {
	url := databaseURL(t)
	schema := freshSchema(t, url)
	ctx := t.Context()
	s, err := postgres.Open(ctx, url, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	input := []byte(`{"text": "original"}`)
	res, err := s.Admit(ctx, &store.AdmitParams{Items: []*store.AdmitItem{{
		TaskID: "task-1", Tenant: "acme", IdempotencyKey: "k1", RequestHash: "h1",
		Workflow: "demo.echo", Pool: "online", MaxAttempts: 1, Input: input,
	}}})
	if err != nil || res[0].Outcome != store.Admitted {
		t.Fatalf("Admit = %v, %v; want admitted", res, err)
	}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	table := pgx.Identifier{schema, "tasks"}.Sanitize()
	_, err = conn.Exec(ctx, "UPDATE "+table+" SET input = $1 WHERE id = $2", []byte(`{"text": "changed"}`), "task-1")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23001" {
		t.Errorf("UPDATE of tasks: err = %v, want the trigger's restrict_violation (23001)", err)
	}
	claimed, err := s.Claim(ctx, &store.ClaimParams{Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "n", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(claimed) != 1 || string(claimed[0].Input) != string(input) {
		t.Errorf("input claimed after the refused UPDATE = %v, %v; want %q", claimed, err, input)
	}
}

// Admissions of one key by a new tenant to different pools share no row lock
// (neither the pool's nor the tenant's, which does not exist yet); they meet
// on the key's unique index entry, and the losers answer from the winner's
// binding.
func TestSameKeyAcrossPools(t *testing.T) {
	s := open(t)
	defer s.Close()
	const rounds, n = 16, 4
	for round := range rounds {
		tenant := fmt.Sprintf("tenant-%d", round)
		results := make([]store.AdmitResult, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				pool := dockettype.PoolOnline
				if i%2 == 1 {
					pool = dockettype.PoolOffline
				}
				it := &store.AdmitItem{
					TaskID: fmt.Sprintf("task-%d-%d", round, i), Tenant: tenant, IdempotencyKey: "same", RequestHash: "h",
					Workflow: "demo.echo", Pool: pool, MaxAttempts: 1,
				}
				<-start
				res, err := s.Admit(t.Context(), &store.AdmitParams{Items: []*store.AdmitItem{it}})
				if err == nil {
					results[i] = res[0]
				}
				errs[i] = err
			})
		}
		close(start)
		wg.Wait()
		var admitted []string
		replayed := 0
		for i, r := range results {
			if errs[i] != nil {
				t.Fatalf("round %d: Admit %d: %v", round, i, errs[i])
			}
			switch r.Outcome {
			case store.Admitted:
				admitted = append(admitted, r.Task.ID)
			case store.Replayed:
				replayed++
			}
		}
		if len(admitted) != 1 || replayed != n-1 {
			t.Fatalf("round %d: admitted %v and %d replayed, want 1 admitted and %d replayed", round, admitted, replayed, n-1)
		}
		for i, r := range results {
			if r.Task == nil || r.Task.ID != admitted[0] {
				t.Errorf("round %d: result %d: task %v, want %s", round, i, r.Task, admitted[0])
			}
		}
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Pools[0].InFlight + st.Pools[1].InFlight; got != rounds {
		t.Errorf("in flight = %+v, want %d units in all (one task per round)", st.Pools, rounds)
	}
}

// Nodes that start at once on a fresh schema all migrate it: the advisory
// lock queues them and each one after the first finds nothing to do.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	url := databaseURL(t)
	schema := freshSchema(t, url)
	const n = 4
	stores := make([]*engine.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(t.Context(), url, postgres.Options{Schema: schema, MaxConns: 2})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		if err := stores[i].Ping(t.Context()); err != nil {
			t.Errorf("Ping %d: %v", i, err)
		}
		stores[i].Close()
	}

	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var applied int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM "+pgx.Identifier{schema, "docket_schema_migrations"}.Sanitize()).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	if applied != len(files) {
		t.Errorf("docket_schema_migrations rows = %d, want %d (each migration applied once)", applied, len(files))
	}
}
