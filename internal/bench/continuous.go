package bench

import (
	"context"
	"fmt"
	"time"
)

// continuous keeps Backlog tasks queued ahead of the workers (topping it up
// with batch admission) for Duration and counts the tasks finished in that
// window. The backlog left at the end is then drained, untimed, so that
// every task of the run ends terminal.
func (h *harness) continuous(ctx context.Context) (*Result, error) {
	backlog, batch := h.opts.Backlog, h.opts.Batch
	p := newProgress(h.opts.Progress, h.clock, h.opts.ProgressEvery)
	admitted, b := 0, 0
	admit := func(n int) error {
		for n > 0 {
			k := min(batch, n)
			if err := h.admitBatch(ctx, h.tenants[b%len(h.tenants)], k); err != nil {
				return err
			}
			b++
			admitted += k
			n -= k
		}
		return nil
	}
	p.reset("preload", 0)
	if err := admit(backlog); err != nil {
		return nil, err
	}

	if err := h.start(ctx); err != nil {
		return nil, err
	}
	p.reset("run", 0)
	// Top up once a batch's worth (or half the backlog, if smaller) has
	// been worked off, so that admissions come in full batches.
	threshold := max(1, min(batch, backlog/2))
	start := h.clock.Now()
	base := h.terminal()
	tick := h.clock.NewTicker(pollEvery)
	defer tick.Stop()
	windows := newWindows(h.opts.Duration, start, base)
	for h.clock.Since(start) < h.opts.Duration {
		windows.observe(h.clock.Now(), h.terminal())
		if deficit := backlog - (admitted - h.terminal()); deficit >= threshold {
			if err := admit(deficit); err != nil {
				return nil, err
			}
		}
		p.maybe(func() string {
			done := h.terminal() - base
			return fmt.Sprintf("%d finished  %8.0f tasks/s  %d queued or running", done, p.rate(done), admitted-h.terminal())
		})
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-tick.Chan():
		}
	}
	end := h.clock.Now()
	done := h.terminal()
	res := &Result{Tasks: done - base, Seconds: end.Sub(start).Seconds(), PeakRSSBytes: peakRSS(), Windows: windows.finish(end, done)}

	p.reset("drain", 0)
	if _, err := h.waitTerminal(ctx, admitted, p, func() string {
		return fmt.Sprintf("%d/%d terminal", h.terminal(), admitted)
	}); err != nil {
		return nil, err
	}
	res.Admitted = admitted
	if err := h.latencies(ctx, res, start, end); err != nil {
		return nil, err
	}
	return res, nil
}

// windows measures the rate in consecutive windows of a run, to show
// whether throughput holds as the tables grow: one-minute windows for runs
// of five minutes or more, else a tenth of the run (at least a second).
type windows struct {
	length time.Duration
	start  time.Time // of the open window
	base   int       // tasks finished when it opened
	rates  []float64
}

func newWindows(run time.Duration, start time.Time, finished int) *windows {
	length := run / 10
	if run >= 5*time.Minute {
		length = time.Minute
	}
	return &windows{length: max(length, time.Second), start: start, base: finished}
}

// observe closes the open window once it has lasted its length.
func (w *windows) observe(now time.Time, finished int) {
	if d := now.Sub(w.start); d >= w.length {
		w.rates = append(w.rates, float64(finished-w.base)/d.Seconds())
		w.start, w.base = now, finished
	}
}

// finish closes the last window when it covers at least half a length (the
// run's loop ends before it would close it: a 10-minute run has 10 minutes)
// and returns the rates.
func (w *windows) finish(end time.Time, finished int) []float64 {
	if d := end.Sub(w.start); d >= w.length/2 {
		w.rates = append(w.rates, float64(finished-w.base)/d.Seconds())
	}
	return w.rates
}
