package queue

import (
	"context"
	"errors"
	"time"

	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/store"
)

// admitStore is the store call the admitter makes.
type admitStore interface {
	Admit(ctx context.Context, params *store.AdmitParams) ([]store.AdmitResult, error)
}

// admitter group-commits concurrent submissions: it takes whatever requests
// are waiting (up to AdmitBatch) and admits them in one store transaction.
// A lone request is admitted at once; under load one commit serves many.
type admitter struct {
	baseService
	store        admitStore
	queryTimeout time.Duration
	in           chan *admitRequest
	loop         startstop.Loop
}

type admitRequest struct {
	ctx  context.Context
	item *store.AdmitItem
	done chan admitResponse
}

type admitResponse struct {
	res store.AdmitResult
	err error
}

var errNotRunning = errors.New("queue: service is not running")

func newAdmitter(base baseService, st admitStore, batch int, queryTimeout time.Duration) *admitter {
	return &admitter{baseService: base, store: st, queryTimeout: queryTimeout, in: make(chan *admitRequest, batch)}
}

func (a *admitter) Start(ctx context.Context) error { return a.loop.Start(ctx, a.run) }
func (a *admitter) Stop()                           { a.loop.Stop() }

// admit queues one item and waits for its outcome. When the service is not
// running it admits directly.
func (a *admitter) admit(ctx context.Context, item *store.AdmitItem) (store.AdmitResult, error) {
	if !a.loop.Running() {
		return a.direct(ctx, item)
	}
	req := &admitRequest{ctx: ctx, item: item, done: make(chan admitResponse, 1)}
	select {
	case a.in <- req:
	case <-ctx.Done():
		return store.AdmitResult{}, ctx.Err()
	}
	select {
	case r := <-req.done:
		return r.res, r.err
	case <-ctx.Done():
		// The batch may still commit; the client retries with its key.
		return store.AdmitResult{}, ctx.Err()
	}
}

func (a *admitter) direct(ctx context.Context, item *store.AdmitItem) (store.AdmitResult, error) {
	qctx, cancel := context.WithTimeout(ctx, a.queryTimeout)
	defer cancel()
	res, err := a.store.Admit(qctx, &store.AdmitParams{Now: a.clock.Now(), Items: []*store.AdmitItem{item}})
	if err != nil {
		return store.AdmitResult{}, err
	}
	return res[0], nil
}

func (a *admitter) run(ctx context.Context) {
	batch := make([]*admitRequest, 0, cap(a.in))
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			a.drain(errNotRunning)
			return
		case r := <-a.in:
			batch = append(batch, r)
		}
	fill:
		for len(batch) < cap(batch) {
			select {
			case r := <-a.in:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		a.commit(batch)
	}
}

func (a *admitter) commit(batch []*admitRequest) {
	items := make([]*store.AdmitItem, 0, len(batch))
	live := batch[:0:0]
	for _, r := range batch {
		if r.ctx.Err() != nil { // the caller gave up before we started
			r.done <- admitResponse{err: r.ctx.Err()}
			continue
		}
		items = append(items, r.item)
		live = append(live, r)
	}
	if len(items) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.queryTimeout)
	defer cancel()
	res, err := a.store.Admit(ctx, &store.AdmitParams{Now: a.clock.Now(), Items: items})
	for i, r := range live {
		if err != nil {
			r.done <- admitResponse{err: err}
			continue
		}
		r.done <- admitResponse{res: res[i]}
	}
}

func (a *admitter) drain(err error) {
	for {
		select {
		case r := <-a.in:
			r.done <- admitResponse{err: err}
		default:
			return
		}
	}
}
