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
	p := newProgress(h.opts.Progress, h.opts.ProgressEvery)
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
	start := time.Now()
	base := h.terminal()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	// The rate in each window shows whether throughput holds as the
	// tables grow: one-minute windows for runs of five minutes or more.
	window := h.opts.Duration / 10
	if h.opts.Duration >= 5*time.Minute {
		window = time.Minute
	}
	window = max(window, time.Second)
	var windows []float64
	windowStart, windowBase := start, base
	for time.Since(start) < h.opts.Duration {
		if now := time.Now(); now.Sub(windowStart) >= window {
			done := h.terminal()
			windows = append(windows, float64(done-windowBase)/now.Sub(windowStart).Seconds())
			windowStart, windowBase = now, done
		}
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
		case <-tick.C:
		}
	}
	end := time.Now()
	res := &Result{Tasks: h.terminal() - base, Seconds: end.Sub(start).Seconds(), PeakRSSBytes: peakRSS(), Windows: windows}

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
