package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/store"
)

// admitStore is the store call the admitter makes.
type admitStore interface {
	Admit(ctx context.Context, params *store.AdmitParams) ([]store.AdmitResult, error)
}

// admitter group-commits concurrent submissions: it takes whatever requests
// are waiting (up to AdmitBatch items) and admits them in one store
// transaction. A request is a group of items (one Submit's, or a
// SubmitBatch's valid items) that is never split: its items are admitted
// in order, in one transaction, or none is. A lone request is admitted at
// once; under load one commit serves many. With several committers (a
// database that takes concurrent writers), the next batch gathers and
// begins while the previous one commits.
type admitter struct {
	baseService
	store        admitStore
	queryTimeout time.Duration
	in           chan *admitRequest
	loops        []startstop.Loop // one per committer
}

type admitRequest struct {
	ctx   context.Context
	items []*store.AdmitItem
	done  chan admitResponse
}

type admitResponse struct {
	res   []store.AdmitResult // one per item, in order
	batch int                 // items of the transaction (the group commit)
	err   error
}

var (
	errNotRunning  = errors.New("queue: service is not running")
	errResultCount = fmt.Errorf("admit: %w: not one result per item", store.ErrInvalid)
)

func newAdmitter(base baseService, st admitStore, batch, committers int, queryTimeout time.Duration) *admitter {
	return &admitter{baseService: base, store: st, queryTimeout: queryTimeout,
		in: make(chan *admitRequest, batch), loops: make([]startstop.Loop, max(committers, 1))}
}

func (a *admitter) Start(ctx context.Context) error {
	for i := range a.loops {
		if err := a.loops[i].Start(ctx, a.run); err != nil {
			a.Stop()
			return err
		}
	}
	return nil
}

func (a *admitter) Stop() {
	for i := range a.loops {
		a.loops[i].Stop()
	}
}

// admit queues a group of items and waits for their outcomes, one per item
// in order. When the service is not running it admits them directly.
func (a *admitter) admit(ctx context.Context, items []*store.AdmitItem) ([]store.AdmitResult, error) {
	res, _, err := a.admitGroup(ctx, items)
	return res, err
}

// admitGroup is admit, also telling how many items the transaction that
// admitted them held (theirs and the concurrent submissions').
func (a *admitter) admitGroup(ctx context.Context, items []*store.AdmitItem) ([]store.AdmitResult, int, error) {
	if !a.loops[0].Running() {
		res, err := a.direct(ctx, items)
		return res, len(items), err
	}
	req := &admitRequest{ctx: ctx, items: items, done: make(chan admitResponse, 1)}
	select {
	case a.in <- req:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	select {
	case r := <-req.done:
		return r.res, r.batch, r.err
	case <-ctx.Done():
		// The batch may still commit; the client retries with its key.
		return nil, 0, ctx.Err()
	}
}

func (a *admitter) direct(ctx context.Context, items []*store.AdmitItem) ([]store.AdmitResult, error) {
	qctx, cancel := context.WithTimeout(ctx, a.queryTimeout)
	defer cancel()
	return a.store.Admit(qctx, &store.AdmitParams{Now: a.clock.Now(), Items: items})
}

func (a *admitter) run(ctx context.Context) {
	limit := cap(a.in) // items per transaction; a larger group still goes whole
	batch := make([]*admitRequest, 0, limit)
	for {
		batch = batch[:0]
		var n int
		select {
		case <-ctx.Done():
			a.drain(errNotRunning)
			return
		case r := <-a.in:
			batch, n = append(batch, r), len(r.items)
		}
	fill:
		for n < limit {
			select {
			case r := <-a.in:
				batch, n = append(batch, r), n+len(r.items)
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
		items = append(items, r.items...)
		live = append(live, r)
	}
	if len(items) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.queryTimeout)
	defer cancel()
	res, err := a.store.Admit(ctx, &store.AdmitParams{Now: a.clock.Now(), Items: items})
	if err == nil && len(res) != len(items) {
		err = errResultCount
	}
	for _, r := range live {
		if err != nil {
			r.done <- admitResponse{err: err}
			continue
		}
		// Each group's results are the next len(r.items), in its order.
		r.done <- admitResponse{res: res[:len(r.items):len(r.items)], batch: len(items)}
		res = res[len(r.items):]
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
