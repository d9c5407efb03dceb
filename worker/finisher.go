package worker

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// maxFinishItems is the most outcomes one finish call carries.
const maxFinishItems = 1000

// finisher batches outcomes into finish calls: it takes whatever outcomes
// are waiting (up to maxFinishItems) and sends them in one call, so that a
// burst of fast handlers costs a few calls, and a lone outcome goes at
// once. A call that fails on the network is sent again (the server answers
// a committed item again as ok); its leases stay heartbeated meanwhile.
type finisher struct {
	w *Worker

	mu      sync.Mutex
	pending []finishItem
	closed  bool
	ready   chan struct{} // buffered(1): outcomes are pending, or closed
}

func newFinisher(w *Worker) *finisher { return &finisher{w: w, ready: make(chan struct{}, 1)} }

func (f *finisher) add(it finishItem) {
	f.mu.Lock()
	f.pending = append(f.pending, it)
	f.mu.Unlock()
	f.signal()
}

func (f *finisher) signal() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// close makes run write what is pending and return.
func (f *finisher) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.signal()
}

func (f *finisher) take() ([]finishItem, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(len(f.pending), maxFinishItems)
	batch := f.pending[:n:n]
	f.pending = f.pending[n:]
	return batch, f.closed && len(f.pending) == 0
}

func (f *finisher) run() {
	for {
		<-f.ready
		for {
			batch, done := f.take()
			if len(batch) > 0 {
				f.send(batch)
			}
			if done {
				return
			}
			if len(batch) == 0 {
				break
			}
		}
	}
}

// send writes one batch, retrying network failures for up to a minute.
func (f *finisher) send(batch []finishItem) {
	w := f.w
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ans itemsAnswer
	err := retry(ctx, func() error {
		return w.c.Call(ctx, http.MethodPost, "/v1/worker/finish", finishRequest{Items: batch, WorkerID: w.opts.WorkerID}, &ans)
	})
	if err != nil {
		// The leases lapse and the server runs the tasks again.
		w.log.Warn("outcomes not written", "code", codeOf(err), "count", len(batch))
		for _, it := range batch {
			w.forget(it.Lease)
		}
		return
	}
	for i, it := range batch {
		w.forget(it.Lease)
		if i < len(ans.Items) && ans.Items[i].Status != "ok" {
			w.log.Info("outcome refused", "status", ans.Items[i].Status, "lease_index", i)
		}
	}
}
