//go:build unix

package faultcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/store"
)

// ScenarioDependencies submits dependency graphs while nodes are killed.
const ScenarioDependencies = "dependencies"

// dependencies submits, as a tenant of its own and beside the usual load,
// one small graph after another in a batch (two roots, one of which fails
// in a third of the graphs; a join on both; a task after the join; a task
// that runs anyway), and now and then a fan-in by task ID over the joins
// of earlier graphs. It kills a random node with SIGKILL every 1–4 s and
// starts it again 0–1 s later; on PostgreSQL it runs three nodes, and
// where the cluster can be stopped every fourth fault stops PostgreSQL
// for 1–3 s instead. A batch whose answer is lost is sent again (the same
// keys: a replay). After the drain it reads every task of the tenant with
// its dependencies and history (checkDependencies).
type dependencies struct {
	pgStops
	tenant  string
	members []*client.Client // one per node

	mu     sync.Mutex
	joins  []string // the joins admitted so far
	graphs int
}

func newDependencies() Scenario { return &dependencies{} }

func (*dependencies) Name() string { return ScenarioDependencies }

func (*dependencies) Needs(string) string { return "" }

func (d *dependencies) Setup(ctx context.Context, r *rig) error {
	nodes := 1
	if dsn.IsPostgres(r.opts.DB) {
		nodes = 3
		d.findPG(r)
	}
	for range nodes {
		if err := r.addNode(nodeConfig{}); err != nil {
			return err
		}
	}
	var err error
	d.tenant, d.members, err = r.ownTenant(ctx, "fc-deps-", "")
	return err
}

// submit sends one batch through the next node until it is answered (a
// node may be down or restarting), for up to a minute: the same keys each
// time, so a batch that committed before its answer was lost is replayed.
func (d *dependencies) submit(ctx context.Context, r *rig, tasks []*client.SubmitParams) ([]client.BatchResult, error) {
	give := r.opts.Clock.Now().Add(time.Minute)
	for try := 1; ; try++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := d.members[try%len(d.members)].SubmitBatch(cctx, &client.SubmitBatchParams{Tasks: tasks})
		cancel()
		if err == nil || ctx.Err() != nil || r.opts.Clock.Now().After(give) {
			return res, err
		}
		var ae *client.Error
		if errors.As(err, &ae) && ae.StatusCode < 500 && ae.StatusCode != 429 {
			return nil, err // refused: trying again will not help
		}
		if err := sleep(ctx, r.opts.Clock, min(time.Duration(try)*200*time.Millisecond, 2*time.Second)); err != nil {
			return nil, err
		}
	}
}

// graph is the batch of graph n.
func (d *dependencies) graph(n int, rng *mrand.Rand) []*client.SubmitParams {
	key := func(s string) string { return fmt.Sprintf("g%d-%s", n, s) }
	in := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	task := func(k, workflow string, input any, deps ...string) *client.SubmitParams {
		return &client.SubmitParams{IdempotencyKey: key(k), Workflow: workflow, Pool: dockettype.PoolOffline,
			Input: in(input), TimeoutMS: 120_000, DependsOn: deps}
	}
	second := task("b", "demo.echo", map[string]int{"graph": n})
	if rng.IntN(3) == 0 {
		second = task("b", "demo.fail", map[string]any{"code": "boom", "retryable": false})
	}
	// The input marks it, so that the check reads its policy from the
	// database even where the batch's answer was lost.
	anyway := task("anyway", "demo.echo", map[string]any{"graph": n, "anyway": true}, key("a"), key("b"))
	anyway.OnDependencyFailure = "run"
	return []*client.SubmitParams{
		task("a", "demo.sleep", map[string]int{"ms": 20 + rng.IntN(400)}),
		second,
		task("join", "demo.sleep", map[string]int{"ms": rng.IntN(100)}, key("a"), key("b")),
		task("after", "demo.echo", map[string]int{"graph": n}, key("join")),
		anyway,
	}
}

func (d *dependencies) load(ctx context.Context, r *rig, rng *mrand.Rand) error {
	for n := 0; ctx.Err() == nil; n++ {
		batch := d.graph(n, rng)
		d.mu.Lock()
		if len(d.joins) >= 3 && n%5 == 4 {
			// A fan-in by task ID over the joins of earlier graphs.
			fan := &client.SubmitParams{IdempotencyKey: fmt.Sprintf("g%d-fan", n), Workflow: "demo.echo",
				Pool: dockettype.PoolOffline, TimeoutMS: 120_000, DependsOn: append([]string(nil), d.joins[len(d.joins)-3:]...)}
			batch = append(batch, fan)
		}
		d.mu.Unlock()
		res, err := d.submit(ctx, r, batch)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("submit graph %d: %w", n, err)
		}
		d.mu.Lock()
		d.graphs++
		for i, it := range res {
			if it.Task == nil {
				continue
			}
			if strings.HasSuffix(batch[i].IdempotencyKey, "-join") {
				d.joins = append(d.joins, it.Task.ID)
			}
		}
		d.mu.Unlock()
		if sleep(ctx, r.opts.Clock, time.Duration(50+rng.IntN(200))*time.Millisecond) != nil {
			return nil
		}
	}
	return nil
}

func (d *dependencies) Inject(ctx context.Context, r *rig, rng *mrand.Rand) error {
	loadRng := mrand.New(mrand.NewPCG(rng.Uint64(), rng.Uint64()))
	loaded := make(chan error, 1)
	go func() { loaded <- d.load(ctx, r, loadRng) }()
	err := r.killsAndStops(ctx, rng, d.pg)
	return errors.Join(err, <-loaded)
}

// collectDependencies waits (up to the drain timeout) until every task of
// the tenant is terminal, then reads each with its dependencies and
// history.
func (d *dependencies) collectDependencies(ctx context.Context, r *rig, st store.Store) (*DependencyView, error) {
	tasks, _, err := r.endedTasks(ctx, st, d.tenant, r.opts.Clock.Now().Add(r.opts.DrainTimeout), 250*time.Millisecond)
	if err != nil {
		return nil, err
	}
	v := &DependencyView{Tasks: map[string]*DependencyTask{}}
	d.mu.Lock()
	v.Graphs = d.graphs
	d.mu.Unlock()
	for _, t := range tasks {
		dt, err := readDependencyTask(ctx, st, &store.GetTaskParams{Tenant: d.tenant, TaskID: t.ID})
		if err != nil {
			return nil, fmt.Errorf("read task %s: %w", t.ID, err)
		}
		v.Tasks[t.ID] = dt
	}
	return v, nil
}

// readDependencyTask reads a task with its history, and from its input
// whether it was submitted to run anyway (the graph's "anyway" task).
func readDependencyTask(ctx context.Context, st store.Store, p *store.GetTaskParams) (*DependencyTask, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	full, err := st.GetTask(ctx, p)
	if err != nil {
		return nil, err
	}
	evs, err := st.ListEvents(ctx, p)
	if err != nil {
		return nil, err
	}
	input, err := st.GetInput(ctx, p)
	if err != nil {
		return nil, err
	}
	var marks struct {
		Anyway bool `json:"anyway"`
	}
	_ = json.Unmarshal(input, &marks) // other inputs are not objects of this shape
	return &DependencyTask{Task: full, Events: evs, Run: marks.Anyway}, nil
}
