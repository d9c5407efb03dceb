package faultcheck

import (
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/docket-dev/docket/dockettype"
)

// parsed is the checker's input indexed once for the passes: what each key
// was answered, what clients were shown of each task, what the execution
// logs say of each lease, and which servers were stopped gracefully. The
// passes read it and change nothing.
type parsed struct {
	in  *CheckInput
	db  map[string]*TaskView // the store's snapshot; never nil
	ids []string             // db's task IDs, sorted

	keys     []tenantKey            // every key bound to a task, sorted
	keyTasks map[tenantKey][]string // the distinct tasks each key was bound to, in answer order
	acked    map[tenantKey]bool     // a submit of the key was answered with a task
	// ackedInLoad: … during the load; replayedInResolve: the replay after
	// the load was answered 200 with a task.
	ackedInLoad       map[tenantKey]bool
	replayedInResolve map[tenantKey]bool
	resolved          map[tenantKey]bool // keys replayed after the load → whether a definite answer came
	only503           map[tenantKey]bool // every load submit of the key was answered 503
	owner             map[string]tenantKey
	sightings         map[string][]sighting // the states clients were shown of each task
	notFound          []Op                  // reads and cancels answered 404

	execs map[lease]*execution
	// graceful are the PIDs of the servers stopped with SIGTERM that
	// exited by themselves, with status 0, in time.
	graceful map[int]bool
	// unseenClaimFaults: a fault of the run can let a claim commit unseen
	// by the server that made it — a server killed or frozen, a connection
	// cut, a stop that had to be killed.
	unseenClaimFaults bool
}

type tenantKey struct{ tenant, key string }

// sighting is a state a client was shown of a task, by one call.
type sighting struct {
	state         dockettype.State
	invoked, done time.Time
	op            int
}

// lease names one claim of a task: the task and the epoch the claim set.
type lease struct {
	task  string
	epoch int64
}

// execution is what the execution logs say of the executions under one
// lease: one, unless checkExecutions finds otherwise.
type execution struct {
	pid     int
	attempt int // the first start line's
	starts  int
	ended   bool   // an end line was logged
	outcome string // the first end line's: ok, retry, fail or stopped
	// inShutdown: the execution ended (or, logging no end, was left) after
	// the checker marked its process's log for SIGTERM.
	inShutdown bool
}

// finished reports whether the execution returned an outcome of its own
// (not one a cancel, a lost lease or a shutdown cut short).
func (x *execution) finished() bool {
	return x.outcome == "ok" || x.outcome == "retry" || x.outcome == "fail"
}

func parse(in *CheckInput) *parsed {
	p := &parsed{in: in, db: in.Snapshot.Store,
		keyTasks: map[tenantKey][]string{}, acked: map[tenantKey]bool{}, ackedInLoad: map[tenantKey]bool{},
		replayedInResolve: map[tenantKey]bool{}, resolved: map[tenantKey]bool{}, only503: map[tenantKey]bool{},
		owner: map[string]tenantKey{}, sightings: map[string][]sighting{},
		execs: map[lease]*execution{}, graceful: map[int]bool{}}
	if p.db == nil {
		p.db = map[string]*TaskView{}
	}
	for id := range p.db {
		p.ids = append(p.ids, id)
	}
	sort.Strings(p.ids)
	p.parseOps(in.Ops)
	p.parseExecs(in.Execs)
	return p
}

// bind records that key k was answered with (or, its answer dropped, made)
// task id.
func (p *parsed) bind(k tenantKey, id string) {
	if !slices.Contains(p.keyTasks[k], id) {
		p.keyTasks[k] = append(p.keyTasks[k], id)
	}
	if _, ok := p.owner[id]; !ok {
		p.owner[id] = k
	}
}

func (p *parsed) parseOps(ops []Op) {
	for _, op := range ops {
		k := tenantKey{op.Tenant, op.Key}
		switch {
		case op.Kind == OpFault:
			if op.Fault == FaultDropResponse && op.TaskID != "" {
				// The server committed this task for the key; the client
				// was not told.
				p.bind(k, op.TaskID)
			}
			switch name := faultName(op.Fault); {
			case name == FaultTerm && op.Outcome == OK && op.PID != 0:
				p.graceful[op.PID] = true
			case name != FaultStart && name != FaultDropResponse:
				p.unseenClaimFaults = true
			}
			continue
		case (op.Kind == OpRead || op.Kind == OpCancel) && op.Status == http.StatusNotFound:
			p.notFound = append(p.notFound, op)
		case op.Kind == OpSubmit:
			if op.Phase == PhaseLoad {
				if _, ok := p.only503[k]; !ok {
					p.only503[k] = true
				}
				if op.Outcome != Indeterminate || op.Status != http.StatusServiceUnavailable {
					p.only503[k] = false
				}
			}
			if op.Outcome == OK && op.TaskID != "" {
				p.bind(k, op.TaskID)
				p.acked[k] = true
				if op.Phase == PhaseLoad {
					p.ackedInLoad[k] = true
				}
				if op.Phase == PhaseResolve && op.Replayed {
					p.replayedInResolve[k] = true
				}
			}
			if op.Phase == PhaseResolve {
				if _, ok := p.resolved[k]; !ok {
					p.resolved[k] = false
				}
				if op.Outcome != Indeterminate {
					p.resolved[k] = true
				}
			}
		}
		if op.Outcome == OK && op.TaskID != "" && op.State != "" {
			p.sightings[op.TaskID] = append(p.sightings[op.TaskID], sighting{state: op.State,
				invoked: op.Invoked, done: op.Complete, op: op.Index})
		}
	}
	for k := range p.keyTasks {
		p.keys = append(p.keys, k)
	}
	sort.Slice(p.keys, func(i, j int) bool {
		a, b := p.keys[i], p.keys[j]
		return a.tenant < b.tenant || a.tenant == b.tenant && a.key < b.key
	})
}

// parseExecs indexes the execution records by lease. Each process's
// records come in the order it wrote them, so an end line after the
// process's term mark ended during its shutdown.
func (p *parsed) parseExecs(recs []ExecRecord) {
	termed := map[int]bool{}
	at := func(e ExecRecord) *execution {
		l := lease{e.Task, e.Epoch}
		x, ok := p.execs[l]
		if !ok {
			x = &execution{pid: e.PID, attempt: e.Attempt}
			p.execs[l] = x
		}
		return x
	}
	for _, e := range recs {
		switch e.Event {
		case execTerm:
			termed[e.PID] = true
		case execStart:
			at(e).starts++
		case execEnd:
			if x := at(e); !x.ended {
				x.ended, x.outcome, x.inShutdown = true, e.Outcome, termed[e.PID]
			}
		}
	}
	for _, x := range p.execs {
		if !x.ended {
			x.inShutdown = termed[x.pid]
		}
	}
}

// leases returns the leases the execution logs name, sorted.
func (p *parsed) leases() []lease {
	out := make([]lease, 0, len(p.execs))
	for l := range p.execs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].task < out[j].task || out[i].task == out[j].task && out[i].epoch < out[j].epoch
	})
	return out
}

// isClaim reports whether ev is a claim (queued → running).
func isClaim(ev dockettype.Event) bool {
	return ev.From == dockettype.StateQueued && ev.To == dockettype.StateRunning
}

// isRelease reports whether ev hands a lease back at shutdown.
func isRelease(ev dockettype.Event) bool {
	return ev.From == dockettype.StateRunning && ev.To == dockettype.StateQueued && ev.Code == dockettype.CodeShutdown
}

// isRetry reports whether ev is a retry: a terminal task queued again by a
// client (POST /v1/tasks/{id}/retry, a bulk retry). It is the only way out
// of a terminal state, and it renews the attempt budget.
func isRetry(ev dockettype.Event) bool {
	return ev.From.Terminal() && ev.To == dockettype.StateQueued && ev.Code == dockettype.CodeRetried
}

// leaseEnd finds the claim of tv at epoch and returns the event that ended
// that lease (the next one), or nil while it runs. claimed is false when no
// claim set that epoch.
func leaseEnd(tv *TaskView, epoch int64) (end *dockettype.Event, claimed bool) {
	for i, ev := range tv.Events {
		if isClaim(ev) && ev.Epoch == epoch {
			if i+1 < len(tv.Events) {
				return &tv.Events[i+1], true
			}
			return nil, true
		}
	}
	return nil, false
}
