package faultcheck

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// readers is how many tasks are read at once.
const readers = 8

// ReadStore reads, through the store contract, every task of the tenants
// (ListTasks, page by page) and the tasks of extra (task ID → tenant) that
// the listing did not return, each with its events. A task GetTask does not
// find is absent from the answer.
func ReadStore(ctx context.Context, st store.Reader, tenants []string, extra map[string]string) (map[string]*TaskView, error) {
	want := map[string]string{}
	for _, tenant := range tenants {
		after := ""
		for {
			page, err := st.ListTasks(ctx, &store.ListTasksParams{Tenant: tenant, Limit: 500, After: after})
			if err != nil {
				return nil, fmt.Errorf("list tasks of %s: %w", tenant, err)
			}
			for _, t := range page {
				want[t.ID] = tenant
			}
			if len(page) < 500 {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	for id, tenant := range extra {
		if _, ok := want[id]; !ok {
			want[id] = tenant
		}
	}
	return readEach(ctx, want, func(ctx context.Context, id, tenant string) (*TaskView, error) {
		p := &store.GetTaskParams{Tenant: tenant, TaskID: id}
		t, err := st.GetTask(ctx, p)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		evs, err := st.ListEvents(ctx, p)
		if err != nil {
			return nil, err
		}
		return &TaskView{Task: t, Events: evs}, nil
	})
}

// ReadAPI reads the tasks of want (task ID → tenant) over HTTP with each
// tenant's client. A task answered 404 is absent from the answer.
func ReadAPI(ctx context.Context, clock clockwork.Clock, clients map[string]*client.Client, want map[string]string) (map[string]*TaskView, error) {
	return readEach(ctx, want, func(ctx context.Context, id, tenant string) (*TaskView, error) {
		c, ok := clients[tenant]
		if !ok {
			return nil, fmt.Errorf("no client for tenant %s", tenant)
		}
		var t *dockettype.Task
		var evs []dockettype.Event
		err := retryRead(ctx, clock, func(ctx context.Context) error {
			var err error
			if t, err = c.Get(ctx, id); err != nil {
				return err
			}
			evs, err = c.Events(ctx, id)
			return err
		})
		if client.IsCode(err, dockettype.CodeNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &TaskView{Task: t, Events: evs}, nil
	})
}

// retryRead retries a read a few times: the checker's reads come after
// every fault is healed, but a node may still be settling.
func retryRead(ctx context.Context, clock clockwork.Clock, read func(context.Context) error) error {
	var err error
	for i := range 5 {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = read(rctx)
		cancel()
		if err == nil || client.IsCode(err, dockettype.CodeNotFound) || ctx.Err() != nil {
			return err
		}
		if err := sleep(ctx, clock, time.Duration(i+1)*200*time.Millisecond); err != nil {
			return err
		}
	}
	return err
}

// readEach reads every task of want with a few readers at once.
func readEach(ctx context.Context, want map[string]string, read func(ctx context.Context, id, tenant string) (*TaskView, error)) (map[string]*TaskView, error) {
	type job struct{ id, tenant string }
	jobs := make(chan job)
	var (
		mu       sync.Mutex
		out      = make(map[string]*TaskView, len(want))
		firstErr error
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range readers {
		wg.Go(func() {
			for j := range jobs {
				tv, err := read(ctx, j.id, j.tenant)
				mu.Lock()
				switch {
				case err != nil && firstErr == nil:
					firstErr = fmt.Errorf("read task %s: %w", j.id, err)
					cancel()
				case tv != nil:
					out[j.id] = tv
				}
				mu.Unlock()
			}
		})
	}
feed:
	for id, tenant := range want {
		select {
		case jobs <- job{id, tenant}:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, ctx.Err()
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, clock clockwork.Clock, d time.Duration) error {
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
