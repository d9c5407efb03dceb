//go:build unix

package faultcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/store"
)

// ScenarioFlow runs rate-limited, concurrency-keyed work while nodes are
// killed.
const ScenarioFlow = "flow"

// Flow scenario bounds: a tenant of its own limited to flowRate starts per
// second (burst flowBurst), and flowTasks demo.sleep tasks over flowKeys
// concurrency keys, at most flowPerKey running per key.
const (
	flowRate   = 10
	flowBurst  = 2
	flowPerKey = 2
	flowKeys   = 20
	flowTasks  = 250
)

// flow submits flowTasks keyed tasks as a tenant of its own, beside the
// usual load, with a rate limit on the tenant and a concurrency per key on
// demo.sleep; on PostgreSQL three nodes claim them. It kills a random node
// with SIGKILL every 1–4 s and starts it again 0–1 s later. Half-way it
// removes the rate limit and submits flowTasks more (their keys' next
// tasks are then started by the finishes that free them). After the
// drain it waits for its tasks to end and reads their histories: no
// one-second window with more starts than rate + burst while the limit
// held, no key with more running than its limit (checkFlow).
type flow struct {
	tenant  string
	clients []*client.Client // one per node
	keys    map[string]string
	lifted  *time.Time // when the rate limit was removed
}

func newFlow() Scenario { return &flow{keys: map[string]string{}} }

func (*flow) Name() string { return ScenarioFlow }

func (*flow) Needs(string) string { return "" }

func (f *flow) Setup(ctx context.Context, r *rig) error {
	nodes := 1
	if dsn.IsPostgres(r.opts.DB) {
		nodes = 3
	}
	// Offline workers enough for the keys' slots (the usual load runs
	// online).
	for range nodes {
		if err := r.addNode(nodeConfig{offline: 16}); err != nil {
			return err
		}
	}
	var err error
	f.tenant, f.clients, err = r.ownTenant(ctx, "fc-flow-", "admin")
	return err
}

// call makes a call through the next node when one does not answer (it
// may be down or restarting), for up to a minute.
func (f *flow) call(ctx context.Context, r *rig, do func(ctx context.Context, c *client.Client) error) error {
	give := r.opts.Clock.Now().Add(time.Minute)
	for try := 1; ; try++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := do(cctx, f.clients[try%len(f.clients)])
		cancel()
		if err == nil || ctx.Err() != nil || r.opts.Clock.Now().After(give) {
			return err
		}
		var ae *client.Error
		if errors.As(err, &ae) && ae.StatusCode < 500 && ae.StatusCode != 429 {
			return err
		}
		if err := sleep(ctx, r.opts.Clock, min(time.Duration(try)*200*time.Millisecond, 2*time.Second)); err != nil {
			return err
		}
	}
}

func (f *flow) Inject(ctx context.Context, r *rig, rng *mrand.Rand) error {
	limits := []struct {
		path string
		body map[string]any
	}{
		{"/v1/admin/tenants/" + f.tenant, map[string]any{"rate_per_second": flowRate, "burst": flowBurst}},
		{"/v1/admin/workflows/demo.sleep", map[string]any{"concurrency_per_key": flowPerKey}},
	}
	for _, l := range limits {
		if err := f.call(context.Background(), r, func(ctx context.Context, c *client.Client) error {
			return c.Call(ctx, "PATCH", l.path, l.body, nil)
		}); err != nil {
			return fmt.Errorf("set the flow limits: %w", err)
		}
	}
	if err := f.submit(r, rng, "a"); err != nil {
		return err
	}
	// Half the load under the rate limit, then without it: with no pause
	// or rate limit anywhere, the finish that frees a key's slot starts
	// the key's next task itself (the hand-off), under the same kills.
	half, cancel := context.WithTimeout(ctx, r.opts.Duration/2)
	err := r.killsAndStops(half, rng, nil)
	cancel()
	if err != nil || ctx.Err() != nil {
		return err
	}
	lifted := r.opts.Clock.Now()
	if err := f.call(context.Background(), r, func(ctx context.Context, c *client.Client) error {
		return c.Call(ctx, "PATCH", "/v1/admin/tenants/"+f.tenant, map[string]any{"rate_per_second": nil, "burst": nil}, nil)
	}); err != nil {
		return fmt.Errorf("lift the rate limit: %w", err)
	}
	f.lifted = &lifted
	if err := f.submit(r, rng, "b"); err != nil {
		return err
	}
	return r.killsAndStops(ctx, rng, nil)
}

// submit submits flowTasks keyed tasks, in batches: each key gets tasks
// of 20–120 ms.
func (f *flow) submit(r *rig, rng *mrand.Rand, round string) error {
	for b := 0; b < flowTasks; b += client.MaxBatchItems {
		var tasks []*client.SubmitParams
		for i := b; i < min(b+client.MaxBatchItems, flowTasks); i++ {
			key := fmt.Sprintf("k%02d", i%flowKeys)
			idem := fmt.Sprintf("%s-%s%d", f.tenant, round, i)
			f.keys[idem] = key
			tasks = append(tasks, &client.SubmitParams{IdempotencyKey: idem, Workflow: "demo.sleep", Pool: dockettype.PoolOffline,
				Input: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, 20+rng.IntN(100))), ConcurrencyKey: key, TimeoutMS: 600_000})
		}
		if err := f.call(context.Background(), r, func(ctx context.Context, c *client.Client) error {
			res, err := c.SubmitBatch(ctx, &client.SubmitBatchParams{Tasks: tasks})
			for _, br := range res {
				if err == nil && br.Err != nil {
					err = br.Err
				}
			}
			return err
		}); err != nil {
			return fmt.Errorf("submit the flow tasks: %w", err)
		}
	}
	return nil
}

// Heal: the rig starts stopped nodes.
func (*flow) Heal(*rig) error { return nil }

// Close leaves the limits: they bind only this run's tenant and keyed
// tasks, which no other scenario submits.
func (*flow) Close(*rig) {}

// collectFlow waits for the scenario's tasks to end (for up to 2 minutes)
// and reads them with their histories.
func (f *flow) collectFlow(ctx context.Context, r *rig, st store.Store) (*FlowView, error) {
	if len(f.keys) == 0 {
		return nil, errors.New("the flow tasks were not submitted")
	}
	tasks, live, err := r.endedTasks(ctx, st, f.tenant, r.opts.Clock.Now().Add(2*time.Minute), 500*time.Millisecond)
	if err != nil {
		return nil, err
	}
	if live > 0 {
		r.note(fmt.Sprintf("%d flow tasks had not ended 2 minutes after the drain", live))
	}
	v := &FlowView{RatePerSecond: flowRate, Burst: flowBurst, ConcurrencyPerKey: flowPerKey, RateLifted: f.lifted, Submitted: len(f.keys)}
	for _, t := range tasks {
		evs, err := st.ListEvents(ctx, &store.GetTaskParams{Tenant: f.tenant, TaskID: t.ID})
		if err != nil {
			return nil, fmt.Errorf("read a flow task's events: %w", err)
		}
		v.Tasks = append(v.Tasks, FlowTask{ID: t.ID, Key: t.ConcurrencyKey, State: t.State, Events: evs})
	}
	return v, nil
}
