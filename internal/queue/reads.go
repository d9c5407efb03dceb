package queue

import (
	"context"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// MaxWait is the longest a long poll (GET ?wait=) holds.
const MaxWait = 60 * time.Second

// waitRecheck is how often a long poll re-reads the task, to see tasks
// finished by other nodes.
const waitRecheck = time.Second

// query bounds one API store call by QueryTimeout. Failures are judged
// against the caller's ctx, so a query that times out is a store failure
// while a caller that went away is not.
func (s *Service) query(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.QueryTimeout)
}

// Get returns one of the principal's tenant's tasks.
func (s *Service) Get(ctx context.Context, p dockettype.Principal, id string) (*dockettype.Task, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	t, err := s.store.GetTask(qctx, &store.GetTaskParams{Tenant: p.Tenant, TaskID: id, Now: s.clock.Now()})
	if err != nil {
		return nil, s.storeFailure(ctx, "get_task", err)
	}
	return t, nil
}

// Wait returns the task once it is terminal or after wait (at most
// MaxWait), whichever comes first.
func (s *Service) Wait(ctx context.Context, p dockettype.Principal, id string, wait time.Duration) (*dockettype.Task, error) {
	wait = min(wait, MaxWait)
	t, err := s.Get(ctx, p, id)
	if err != nil || t.State.Terminal() || wait <= 0 {
		return t, err
	}
	deadline := s.clock.NewTimer(wait)
	defer deadline.Stop()
	for {
		done, unsubscribe := s.waiters.subscribe(id)
		// Re-read after subscribing so a transition in between is not missed.
		t, err = s.Get(ctx, p, id)
		if err != nil || t.State.Terminal() {
			unsubscribe()
			return t, err
		}
		recheck := s.clock.NewTimer(waitRecheck)
		s.signals.waiting.signal(id)
		select {
		case <-done:
		case <-recheck.Chan():
		case <-deadline.Chan():
			recheck.Stop()
			unsubscribe()
			return s.Get(ctx, p, id)
		case <-s.draining.done(): // shutting down: answer now
			recheck.Stop()
			unsubscribe()
			return s.Get(ctx, p, id)
		case <-ctx.Done():
			recheck.Stop()
			unsubscribe()
			return nil, ctx.Err()
		}
		recheck.Stop()
		unsubscribe()
	}
}

// List pages the principal's tenant's tasks, newest first.
func (s *Service) List(ctx context.Context, p dockettype.Principal, req *ListRequest) (*ListResult, error) {
	limit := req.Limit
	if limit == 0 {
		limit = 50
	}
	// A refused list is not a refused submission: these are not counted
	// with the admission rejections.
	invalid := func(msg string) error { return dockettype.NewError(dockettype.CodeInvalidRequest, msg) }
	if limit < 0 || limit > 500 {
		return nil, invalid("limit must be between 1 and 500")
	}
	if req.State != "" && !req.State.Valid() {
		return nil, invalid("unknown state")
	}
	if req.Pool != "" && !req.Pool.Valid() {
		return nil, invalid(`pool must be "online" or "offline"`)
	}
	if req.Workflow != "" && !dockettype.ValidWorkflowName(req.Workflow) {
		return nil, invalid("workflow must be a workflow's name: a lowercase dotted identifier (e.g. images.resize) of at most 128 bytes")
	}
	qctx, cancel := s.query(ctx)
	defer cancel()
	tasks, err := s.store.ListTasks(qctx, &store.ListTasksParams{
		Tenant: p.Tenant, State: req.State, Pool: req.Pool, Workflow: req.Workflow, Limit: limit + 1, After: req.After,
		Now: s.clock.Now(),
	})
	if err != nil {
		return nil, s.storeFailure(ctx, "list_tasks", err)
	}
	out := &ListResult{Tasks: tasks}
	if len(tasks) > limit {
		out.Tasks = tasks[:limit]
		out.Next = tasks[limit-1].ID
	}
	if out.Tasks == nil {
		out.Tasks = []*dockettype.Task{}
	}
	return out, nil
}

// Cancel cancels a queued or running task. A terminal task is returned
// unchanged. A running worker on this node is stopped at once and its late
// result is fenced out by the epoch bump.
func (s *Service) Cancel(ctx context.Context, p dockettype.Principal, id string) (*dockettype.Task, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	res, err := s.store.Cancel(qctx, &store.CancelParams{Now: s.clock.Now(), Tenant: p.Tenant, TaskID: id})
	if err != nil {
		return nil, s.storeFailure(ctx, "cancel", err)
	}
	if res.Changed {
		s.cancelled(res.Task.Pool, res.From, res.Previous)
	}
	return res.Task, nil
}

// cancelled does on this node what follows a task's cancel: counts it,
// stops its worker if it ran here under previous, wakes its long polls.
func (s *Service) cancelled(pool dockettype.Pool, from dockettype.State, previous store.Lease) {
	s.metrics.TerminalOutcomes.WithLabelValues(string(pool), string(dockettype.StateCancelled)).Inc()
	if from == dockettype.StateRunning {
		s.leases.stop(previous, errCancelled)
	}
	s.waiters.notify(previous.TaskID)
}

// Events returns the task's history.
func (s *Service) Events(ctx context.Context, p dockettype.Principal, id string) ([]dockettype.Event, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	ev, err := s.store.ListEvents(qctx, &store.GetTaskParams{Tenant: p.Tenant, TaskID: id})
	if err != nil {
		return nil, s.storeFailure(ctx, "list_events", err)
	}
	return ev, nil
}

// Input returns the task's input exactly as admitted (the tenant's own
// tasks only: another tenant's is not_found).
func (s *Service) Input(ctx context.Context, p dockettype.Principal, id string) ([]byte, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	in, err := s.store.GetInput(qctx, &store.GetTaskParams{Tenant: p.Tenant, TaskID: id})
	if err != nil {
		return nil, s.storeFailure(ctx, "get_input", err)
	}
	return in, nil
}

// Evidence returns the task's evidence.
func (s *Service) Evidence(ctx context.Context, p dockettype.Principal, id string) ([]dockettype.Evidence, error) {
	qctx, cancel := s.query(ctx)
	defer cancel()
	ev, err := s.store.ListEvidence(qctx, &store.GetTaskParams{Tenant: p.Tenant, TaskID: id})
	if err != nil {
		return nil, s.storeFailure(ctx, "list_evidence", err)
	}
	return ev, nil
}
