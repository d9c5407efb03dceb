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
	n := h.opts.Tasks
	p := newProgress(h.opts.Progress, h.clock, h.opts.ProgressEvery)
	p.reset("admit", 0)
	admitStart := h.clock.Now()
	admitted := 0
	for b := 0; admitted < n; b++ {
		k := min(h.opts.Batch, n-admitted)
		if err := h.admitBatch(ctx, h.tenants[b%len(h.tenants)], k); err != nil {
			return nil, err
		}
		admitted += k
		p.maybe(func() string { return fmt.Sprintf("%d/%d admitted  %8.0f tasks/s", admitted, n, p.rate(admitted)) })
	}
	admitSeconds := h.clock.Since(admitStart).Seconds()

	p.reset("drain", 0)
	start := h.clock.Now()
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	end, err := h.waitTerminal(ctx, n, p, func() string {
		t := h.terminal()
		return fmt.Sprintf("%d/%d terminal  %8.0f tasks/s", t, n, p.rate(t))
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Tasks: n, Seconds: end.Sub(start).Seconds(), PeakRSSBytes: peakRSS(), Admitted: admitted,
		AdmitSeconds: admitSeconds, AdmitTasksPerSecond: float64(admitted) / admitSeconds}
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
