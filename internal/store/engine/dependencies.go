package engine

import (
	"maps"
	"slices"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Task dependencies.
//
// A task admitted with dependencies waits, queued, with a count of the
// dependencies not resolved yet (see the migration "dependencies"). Every
// transaction that makes a task terminal settles that task's dependents in
// the same commit (settleDependents): a success lowers each dependent's
// count, and the one that reaches zero becomes ready; a failure, timeout
// or cancellation ends each dependent with dependency_failed (cancelled
// when the dependency was cancelled, failed otherwise), which in turn
// settles its own dependents, or, for a dependent that runs anyway
// (on_dependency_failure "run"), counts as resolved. Fan-in costs one
// counter update per finished dependency: nothing rereads the others.

// endedTask is a task a transaction made terminal.
type endedTask struct {
	id            string
	to            dockettype.State
	hasDependents bool
}

// endedOf lists the rows of one End call that some task depends on, each
// with the state it ended in.
func endedOf(moved []Moved, to func(Moved) dockettype.State) []endedTask {
	var out []endedTask
	for _, m := range moved {
		if m.HasDependents {
			out = append(out, endedTask{id: m.TaskID, to: to(m), hasDependents: true})
		}
	}
	return out
}

// answer completes the answer of a new task with its dependencies.
func (p *dependencyPlan) answer(t *dockettype.Task, i int, now time.Time) {
	if p == nil {
		return
	}
	t.DependsOn = p.resolved[i]
	if e, ok := p.fail[t.ID]; ok {
		f := ts(now)
		t.State, t.FinishedAt = e.To, &f
		t.Error = &dockettype.TaskError{Code: e.Code, Message: e.Message}
		return
	}
	if p.waitSet[t.ID] {
		t.WaitingOn = dockettype.WaitingOnDependencies
	}
}

// cascaded reports whether admission ended some of its new tasks.
func (p *dependencyPlan) cascaded() bool { return p != nil && len(p.fail) > 0 }

// reread answers the new tasks with dependencies as the transaction left
// them.
func (p *dependencyPlan) reread(tx Tx, out []store.AdmitResult) error {
	var ids []string
	for i := range p.resolved {
		ids = append(ids, out[i].Task.ID)
	}
	tasks, err := tx.ReadTasks(ids)
	if err != nil {
		return err
	}
	for i, deps := range p.resolved {
		t := tasks[out[i].Task.ID]
		if t == nil {
			return errBindingVanished
		}
		t.DependsOn = deps
		out[i].Task = t
	}
	return nil
}

// settleDependents resolves the dependents of the tasks that just ended,
// and theirs in turn, recording the changes in c.
func settleDependents(tx Tx, c *changes, ended []endedTask, now time.Time) error {
	for len(ended) > 0 {
		outcome := map[string]dockettype.State{}
		var ids []string
		for _, e := range ended {
			if e.hasDependents {
				outcome[e.id] = e.to
				ids = append(ids, e.id)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		slices.Sort(ids)
		deps, err := tx.Dependents(ids)
		if err != nil {
			return err
		}
		release := map[string]int{}
		fail := map[string]End{}
		for _, d := range deps {
			if _, failing := fail[d.TaskID]; failing {
				continue
			}
			to := outcome[d.DependsOn]
			if to == dockettype.StateSucceeded || d.Run {
				release[d.TaskID]++
				continue
			}
			delete(release, d.TaskID)
			fail[d.TaskID] = dependencyFailure(d.TaskID, d.Epoch, to)
		}
		ended = nil
		if len(release) > 0 {
			rows := make([]Release, 0, len(release))
			for _, id := range slices.Sorted(maps.Keys(release)) {
				rows = append(rows, Release{TaskID: id, N: release[id]})
			}
			moved, err := tx.Release(rows, now)
			if err != nil {
				return err
			}
			for _, m := range moved {
				switch {
				case m.Key != "":
					// Now it waits on its key: the flush gives it a
					// free slot of the key, if there is one.
					c.keyWaits(KeyRef{Tenant: m.Tenant, Workflow: m.Workflow, Key: m.Key})
				case m.Ready:
					c.ready(m.Queue, m.Tenant, 1)
				}
			}
		}
		if len(fail) > 0 {
			ends := make([]End, 0, len(fail))
			for _, id := range slices.Sorted(maps.Keys(fail)) {
				ends = append(ends, fail[id])
			}
			moved, err := tx.End(ends, now)
			if err != nil {
				return err
			}
			for _, m := range moved {
				e := fail[m.TaskID]
				c.ended(m, e.To, e.Code)
				ended = append(ended, endedTask{id: m.TaskID, to: e.To, hasDependents: m.HasDependents})
			}
		}
	}
	return nil
}

// dependencyFailure ends a waiting task whose dependency ended in state
// to without success: cancelled with it when it was cancelled, failed
// otherwise, with code dependency_failed either way.
func dependencyFailure(id string, epoch int64, to dockettype.State) End {
	e := End{TaskID: id, Epoch: epoch, From: dockettype.StateQueued, To: dockettype.StateFailed, BumpEpoch: true,
		Code: dockettype.CodeDependencyFailed}
	switch to {
	case dockettype.StateCancelled:
		e.To, e.Message = dockettype.StateCancelled, "a task it depends on was cancelled"
	case dockettype.StateTimedOut:
		e.Message = "a task it depends on timed out"
	default:
		e.Message = "a task it depends on failed"
	}
	return e
}

// admissionDeps is what an admission needs to know of its items'
// dependencies.
type admissionDeps struct {
	// batchRef[i][k] is the index of the earlier item the k-th dependency
	// of item i names, or -1 for a task ID.
	batchRef [][]int
	// external are the states of the named task IDs (not batch items),
	// with their tenants.
	external map[string]DependencyRow
}

// hasDeps reports whether any item has dependencies.
func hasDeps(items []*store.AdmitItem) bool {
	for _, it := range items {
		if len(it.DependsOn) > 0 {
			return true
		}
	}
	return false
}

// readDeps resolves which dependencies of the candidate items name earlier
// items of the call, and reads (marking them depended on) the tasks the
// others name.
func readDeps(tx Tx, items []*store.AdmitItem, candidate func(int) bool) (*admissionDeps, error) {
	byTaskID := make(map[string]int, len(items))
	d := &admissionDeps{batchRef: make([][]int, len(items))}
	var ids []string
	for i, it := range items {
		if len(it.DependsOn) > 0 {
			d.batchRef[i] = make([]int, len(it.DependsOn))
			for k, dep := range it.DependsOn {
				j, ok := byTaskID[dep]
				if !ok {
					j = -1
					if candidate(i) {
						ids = append(ids, dep)
					}
				}
				d.batchRef[i][k] = j
			}
		}
		if _, dup := byTaskID[it.TaskID]; !dup {
			byTaskID[it.TaskID] = i
		}
	}
	d.external = map[string]DependencyRow{}
	if len(ids) == 0 {
		return d, nil
	}
	var err error
	d.external, err = tx.MarkDependencies(sortedUnique(ids))
	return d, err
}

// refused reports whether item i names a task ID that is not one of its
// tenant's tasks.
func (d *admissionDeps) refused(items []*store.AdmitItem, i int) bool {
	for k, dep := range items[i].DependsOn {
		if d.batchRef[i][k] >= 0 {
			continue
		}
		if row, ok := d.external[dep]; !ok || row.Tenant != items[i].Tenant {
			return true
		}
	}
	return false
}

// batchRefused reports whether item i names an earlier item that was not
// answered with a task.
func (d *admissionDeps) batchRefused(i int, out []store.AdmitResult) bool {
	for _, j := range d.batchRef[i] {
		if j >= 0 && out[j].Outcome != store.Admitted && out[j].Outcome != store.Replayed {
			return true
		}
	}
	return false
}

// dependencyPlan is what admission writes for its admitted items'
// dependencies.
type dependencyPlan struct {
	edges    []Edge
	waits    []Wait
	depended []string         // new tasks that others depend on
	fail     map[string]End   // new tasks whose dependency already failed
	resolved map[int][]string // the task IDs each item depends on
	waitSet  map[string]bool
}

// planDeps resolves the admitted items' dependencies to task IDs (an
// earlier item to the task it was answered with) and counts, per item,
// those not yet succeeded. A replayed item named by a later one is read
// (and marked depended on) here.
func planDeps(tx Tx, items []*store.AdmitItem, admitted []int, names []string, d *admissionDeps) (*dependencyPlan, error) {
	p := &dependencyPlan{fail: map[string]End{}, resolved: map[int][]string{}, waitSet: map[string]bool{}}
	isNew := map[string]bool{}
	for _, i := range admitted {
		isNew[items[i].TaskID] = true
	}
	var replayed []string
	for _, i := range admitted {
		for _, j := range d.batchRef[i] {
			if j >= 0 && !isNew[names[j]] {
				if _, ok := d.external[names[j]]; !ok {
					replayed = append(replayed, names[j])
				}
			}
		}
	}
	if len(replayed) > 0 {
		more, err := tx.MarkDependencies(sortedUnique(replayed))
		if err != nil {
			return nil, err
		}
		for id, row := range more {
			d.external[id] = row
		}
	}
	dependedSet := map[string]bool{}
	for _, i := range admitted {
		it := items[i]
		if len(it.DependsOn) == 0 {
			continue
		}
		seen := map[string]bool{}
		var ids []string
		pending := 0
		failedWith := dockettype.State("")
		for k, dep := range it.DependsOn {
			id := dep
			if j := d.batchRef[i][k]; j >= 0 {
				id = names[j]
			}
			if id == "" {
				return nil, errBindingVanished // an earlier item lost its key to a different request meanwhile
			}
			if seen[id] {
				continue
			}
			seen[id] = true
			ids = append(ids, id)
			p.edges = append(p.edges, Edge{DependsOn: id, TaskID: it.TaskID, Ord: len(ids)})
			var state dockettype.State
			if isNew[id] {
				state = dockettype.StateQueued
				dependedSet[id] = true
			} else {
				row, ok := d.external[id]
				if !ok {
					return nil, errBindingVanished // a replayed task deleted meanwhile
				}
				state = row.State
			}
			switch {
			case state == dockettype.StateSucceeded:
			case !state.Terminal():
				pending++
			case it.RunOnDependencyFailure:
			case failedWith == "":
				failedWith = state
			}
		}
		p.resolved[i] = ids
		if failedWith != "" {
			p.fail[it.TaskID] = dependencyFailure(it.TaskID, 0, failedWith)
			pending = max(pending, 1) // waits until the same transaction ends it
		}
		if pending > 0 {
			p.waits = append(p.waits, Wait{TaskID: it.TaskID, Pending: pending, Run: it.RunOnDependencyFailure})
			p.waitSet[it.TaskID] = true
		}
	}
	p.depended = slices.Sorted(maps.Keys(dependedSet))
	return p, nil
}

// waiting reports whether the plan makes the task wait.
func (p *dependencyPlan) waiting(id string) bool {
	return p != nil && p.waitSet[id]
}

// write writes the plan and ends the tasks whose dependency had already
// failed (and settles their dependents in the batch).
func (p *dependencyPlan) write(tx Tx, c *changes, now time.Time) error {
	if p == nil || len(p.edges) == 0 {
		return nil
	}
	if err := tx.InsertDependencies(p.edges, p.waits, p.depended); err != nil {
		return err
	}
	if len(p.fail) == 0 {
		return nil
	}
	ends := make([]End, 0, len(p.fail))
	for _, id := range slices.Sorted(maps.Keys(p.fail)) {
		ends = append(ends, p.fail[id])
	}
	moved, err := tx.End(ends, now)
	if err != nil {
		return err
	}
	var ended []endedTask
	for _, m := range moved {
		e := p.fail[m.TaskID]
		c.ended(m, e.To, e.Code)
		ended = append(ended, endedTask{id: m.TaskID, to: e.To, hasDependents: m.HasDependents})
	}
	return settleDependents(tx, c, ended, now)
}
