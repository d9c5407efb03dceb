package bench

import (
	"context"
	"fmt"
	"time"
)

// burnDown admits Tasks tasks with batch admission while the pools are
// stopped, then starts the service and times the drain until all of them
// are terminal.
func (h *harness) burnDown(ctx context.Context) (*Result, error) {
	p, res, err := h.preload(ctx)
	if err != nil {
		return nil, err
	}
	start := h.clock.Now()
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	return h.drain(ctx, p, res, start)
}

// preload admits Tasks tasks with batch admission, nothing running them
// yet, and starts the drain's progress.
func (h *harness) preload(ctx context.Context) (*progress, *Result, error) {
	n := h.opts.Tasks
	p := newProgress(h.opts.Progress, h.clock, h.opts.ProgressEvery)
	p.reset("admit", 0)
	admitStart := h.clock.Now()
	admitted := 0
	for b := 0; admitted < n; b++ {
		k := min(h.opts.Batch, n-admitted)
		if err := h.admitBatch(ctx, h.tenants[b%len(h.tenants)], k); err != nil {
			return nil, nil, err
		}
		admitted += k
		p.maybe(func() string { return fmt.Sprintf("%d/%d admitted  %8.0f tasks/s", admitted, n, p.rate(admitted)) })
	}
	admitSeconds := h.clock.Since(admitStart).Seconds()
	p.reset("drain", 0)
	return p, &Result{Tasks: n, Admitted: admitted, AdmitSeconds: admitSeconds, AdmitTasksPerSecond: float64(admitted) / admitSeconds}, nil
}

// drain waits until the preloaded tasks are terminal and fills res with
// the time from start and the latencies.
func (h *harness) drain(ctx context.Context, p *progress, res *Result, start time.Time) (*Result, error) {
	n := res.Tasks
	end, err := h.waitTerminal(ctx, n, p, func() string {
		t := h.terminal()
		return fmt.Sprintf("%d/%d terminal  %8.0f tasks/s", t, n, p.rate(t))
	})
	if err != nil {
		return nil, err
	}
	res.Seconds, res.PeakRSSBytes = end.Sub(start).Seconds(), peakRSS()
	if err := h.latencies(ctx, res, time.Time{}, time.Time{}); err != nil {
		return nil, err
	}
	return res, nil
}

// latencies fills the result's admission→finish percentiles from the
// sample: tasks admitted at or after from that finished by until.
func (h *harness) latencies(ctx context.Context, res *Result, from, until time.Time) error {
	ts, err := h.sample.tasks(ctx, h.st)
	if err != nil {
		return err
	}
	lat := admissionToFinish(ts, from, until)
	res.Latency, res.LatencySamples = "admission_to_finish", len(lat)
	res.P50MS, res.P99MS = percentileMS(lat, 0.50), percentileMS(lat, 0.99)
	return nil
}
