package faultcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
)

// callTimeout bounds one call of the load: a call to a frozen server, or
// through a stalled proxy, is indeterminate after it.
const callTimeout = 5 * time.Second

// Task parameters every probe task carries.
const (
	taskMaxAttempts = 5
	taskTimeoutMS   = 120_000
)

// tenantClients reaches one tenant through each endpoint of a run.
type tenantClients struct {
	tenant string
	via    []*client.Client // one per endpoint; a retry moves to the next
}

// workload is the load of a run: processes submitting probe tasks with
// fresh idempotency keys, retrying each key until it is answered, and
// reading and cancelling some of the tasks they were given. Every call is
// recorded in the history.
type workload struct {
	hist    *History
	tenants []*tenantClients
	prefix  string // of every idempotency key of the run
	seed    uint64
	// workflow is what every task runs: ProbeWorkflow, or the remote
	// scenario's RemoteProbeWorkflow (the same probe in remote workers).
	workflow string

	mu      sync.Mutex
	submits map[tenantKey]*client.SubmitParams // every key invoked, with its request
}

func newWorkload(hist *History, tenants []*tenantClients, prefix string, seed uint64, workflow string) *workload {
	return &workload{hist: hist, tenants: tenants, prefix: prefix, seed: seed, workflow: workflow, submits: map[tenantKey]*client.SubmitParams{}}
}

// run runs procs processes until ctx is done, then returns once every call
// in flight has ended.
func (w *workload) run(ctx context.Context, procs int) {
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() { w.process(ctx, p) })
	}
	wg.Wait()
}

type ackedTask struct {
	tenant *tenantClients
	id     string
}

func (w *workload) process(ctx context.Context, p int) {
	rng := rand.New(rand.NewPCG(w.seed, uint64(p)+1))
	var recent []ackedTask // the last tasks this process was given
	remember := func(t ackedTask) {
		recent = append(recent, t)
		if len(recent) > 32 {
			recent = recent[1:]
		}
	}
	for n := 0; ctx.Err() == nil; n++ {
		tc := w.tenants[rng.IntN(len(w.tenants))]
		switch x := rng.Float64(); {
		case x < 0.05 && len(recent) > 0:
			t := recent[rng.IntN(len(recent))]
			w.cancel(ctx, p, rng, t)
		case x < 0.15 && len(recent) > 0:
			t := recent[rng.IntN(len(recent))]
			w.read(ctx, p, rng, t)
		case x < 0.22:
			for _, t := range w.batch(ctx, p, rng, tc, n) {
				remember(t)
			}
		default:
			params := w.newParams(rng, tc, fmt.Sprintf("%s-p%d-%d", w.prefix, p, n))
			if id := w.submitUntilAnswered(ctx, p, rng, tc, params); id != "" {
				remember(ackedTask{tc, id})
			}
		}
	}
}

// newParams makes a probe task: mostly short, some long enough to be
// running when a fault lands, some failing once then succeeding, a few
// failing for good.
func (w *workload) newParams(rng *rand.Rand, tc *tenantClients, key string) *client.SubmitParams {
	in := probeInput{Key: key, Canary: LogCanary}
	switch x := rng.Float64(); {
	case x < 0.70:
		in.MS = int64(rng.IntN(30))
	case x < 0.85:
		in.MS = 300 + int64(rng.IntN(1200))
	case x < 0.95:
		in.MS = int64(rng.IntN(20))
		in.FailUntil = 1
	default:
		in.Fail = true
	}
	input, _ := json.Marshal(in)
	p := &client.SubmitParams{IdempotencyKey: key, Workflow: w.workflow, Input: input,
		MaxAttempts: taskMaxAttempts, TimeoutMS: taskTimeoutMS}
	w.mu.Lock()
	w.submits[tenantKey{tc.tenant, key}] = p
	w.mu.Unlock()
	return p
}

// submitUntilAnswered submits one key until the server answers with a
// task, or ctx ends. A refusal for capacity (429) or no answer is retried
// with the same key and request, on the next endpoint, after a short pause.
func (w *workload) submitUntilAnswered(ctx context.Context, p int, rng *rand.Rand, tc *tenantClients, params *client.SubmitParams) string {
	for try := 0; ctx.Err() == nil; try++ {
		op := w.submit(ctx, p, tc.via[(p+try)%len(tc.via)], tc.tenant, params, PhaseLoad)
		if op.Outcome == OK {
			return op.TaskID
		}
		if op.Outcome == Failed && !retryable(op.Code) {
			return ""
		}
		if sleep(ctx, w.hist.clock, time.Duration(20+rng.IntN(200))*time.Millisecond) != nil {
			return ""
		}
	}
	return ""
}

func retryable(code string) bool {
	return code == string(dockettype.CodeQueueFull) || code == string(dockettype.CodeTenantQuotaExceeded) ||
		code == string(dockettype.CodeTooManyRequests)
}

// submit makes one submit call, records it and returns it as recorded.
func (w *workload) submit(ctx context.Context, p int, c *client.Client, tenant string, params *client.SubmitParams, phase string) Op {
	i := w.hist.Invoke(Op{Process: p, Kind: OpSubmit, Phase: phase, Tenant: tenant, Key: params.IdempotencyKey})
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	res, err := c.Submit(cctx, params)
	cancel()
	var done Op
	w.hist.Complete(i, func(op *Op) {
		if err != nil {
			classify(op, err)
		} else {
			op.Outcome, op.TaskID, op.Replayed, op.State = OK, res.Task.ID, res.Replayed, res.Task.State
			op.Status = http.StatusCreated
			if res.Replayed {
				op.Status = http.StatusOK
			}
		}
		done = *op
	})
	return done
}

// batch submits 2 to 6 new keys in one call; items left unanswered (429,
// or the whole call without an answer) are retried one by one.
func (w *workload) batch(ctx context.Context, p int, rng *rand.Rand, tc *tenantClients, n int) []ackedTask {
	var items []*client.SubmitParams
	for j := range 2 + rng.IntN(5) {
		items = append(items, w.newParams(rng, tc, fmt.Sprintf("%s-p%d-%d-b%d", w.prefix, p, n, j)))
	}
	idx := make([]int, len(items))
	now := w.hist.clock.Now()
	for j, it := range items {
		idx[j] = w.hist.Invoke(Op{Process: p, Kind: OpSubmit, Phase: PhaseLoad, Tenant: tc.tenant, Key: it.IdempotencyKey, Invoked: now})
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	res, err := tc.via[p%len(tc.via)].SubmitBatch(cctx, &client.SubmitBatchParams{Tasks: items})
	cancel()
	var out []ackedTask
	var again []*client.SubmitParams
	for j, it := range items {
		w.hist.Complete(idx[j], func(op *Op) {
			switch {
			case err != nil:
				classify(op, err)
			case len(res) != len(items):
				op.Outcome, op.Code = Indeterminate, "batch_answer_mismatch"
			case res[j].Task != nil:
				op.Outcome, op.Status, op.TaskID, op.Replayed, op.State = OK, res[j].Status, res[j].Task.ID, res[j].Replayed, res[j].Task.State
			default:
				op.Outcome, op.Status = Failed, res[j].Status
				if res[j].Err != nil {
					op.Code = res[j].Err.Code
				}
				if op.Status >= 500 {
					op.Outcome = Indeterminate
				}
			}
			if op.Outcome == OK {
				out = append(out, ackedTask{tc, op.TaskID})
			} else if op.Outcome == Indeterminate || retryable(op.Code) {
				again = append(again, it)
			}
		})
	}
	for _, it := range again {
		if id := w.submitUntilAnswered(ctx, p, rng, tc, it); id != "" {
			out = append(out, ackedTask{tc, id})
		}
	}
	return out
}

// read reads a task the process was given and records the state shown.
func (w *workload) read(ctx context.Context, p int, rng *rand.Rand, t ackedTask) {
	i := w.hist.Invoke(Op{Process: p, Kind: OpRead, Phase: PhaseLoad, Tenant: t.tenant.tenant, TaskID: t.id})
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	task, err := t.tenant.via[rng.IntN(len(t.tenant.via))].Get(cctx, t.id)
	cancel()
	w.hist.Complete(i, func(op *Op) {
		if err != nil {
			classify(op, err)
			return
		}
		op.Outcome, op.Status, op.State = OK, http.StatusOK, task.State
	})
}

// cancel cancels a task the process was given and records the state the
// answer shows (cancelled, or the terminal state it had reached).
func (w *workload) cancel(ctx context.Context, p int, rng *rand.Rand, t ackedTask) {
	i := w.hist.Invoke(Op{Process: p, Kind: OpCancel, Phase: PhaseLoad, Tenant: t.tenant.tenant, TaskID: t.id})
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	task, err := t.tenant.via[rng.IntN(len(t.tenant.via))].Cancel(cctx, t.id)
	cancel()
	w.hist.Complete(i, func(op *Op) {
		if err != nil {
			classify(op, err)
			return
		}
		op.Outcome, op.Status, op.State = OK, http.StatusOK, task.State
	})
}

// classify fills a failed call's outcome: a 4xx answer is a definite
// refusal; a 5xx answer or no answer leaves the outcome unknown.
func classify(op *Op, err error) {
	var ce *client.Error
	if errors.As(err, &ce) {
		op.Status, op.Code = ce.StatusCode, ce.Code
		if ce.StatusCode >= 400 && ce.StatusCode < 500 {
			op.Outcome = Failed
			return
		}
		op.Outcome = Indeterminate
		return
	}
	op.Outcome, op.Code = Indeterminate, "no_answer"
}

// keys returns every key the load invoked, with its request.
func (w *workload) keys() map[tenantKey]*client.SubmitParams {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[tenantKey]*client.SubmitParams, len(w.submits))
	for k, v := range w.submits {
		out[k] = v
	}
	return out
}
