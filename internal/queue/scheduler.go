package queue

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/storefailure"
)

// schedulerLoop is the loop every maintenance scheduler embeds: its own
// goroutine and jittered timer, panic recovery, counters, and helpers for a
// per-query timeout and for bounded batches with a cancellable pause
// between them. A scheduler is its store calls plus a tick function; its
// constructor gives it this loop and its own store fork, so nothing is
// shared between two schedulers and a slow or blocked recovery scan cannot
// delay heartbeats or deadlines.
type schedulerLoop struct {
	baseService
	interval     time.Duration
	jitter       bool
	queryTimeout time.Duration
	metrics      *metrics.Metrics
	signals      *schedulerSignals
	tick         func(ctx context.Context) error
	loop         startstop.Loop
}

// schedulerConfig is the part of the Config every scheduler reads.
type schedulerConfig struct {
	Interval     time.Duration
	QueryTimeout time.Duration
	Jitter       bool // stagger the first tick and each period by up to a tenth of the interval
}

func newSchedulerLoop(base baseService, cfg schedulerConfig, m *metrics.Metrics, sig *schedulerSignals,
	tick func(ctx context.Context) error) schedulerLoop {
	return schedulerLoop{
		baseService:  base,
		interval:     cfg.Interval,
		jitter:       cfg.Jitter,
		queryTimeout: cfg.QueryTimeout,
		metrics:      m,
		signals:      sig,
		tick:         tick,
	}
}

func (sc *schedulerLoop) Start(ctx context.Context) error {
	sc.metrics.Schedulers.Started(sc.name, sc.clock.Now())
	return sc.loop.Start(ctx, sc.run)
}
func (sc *schedulerLoop) Stop() { sc.loop.Stop() }

func (sc *schedulerLoop) run(ctx context.Context) {
	// Stagger the first tick so that nodes started together do not scan
	// together.
	if d := sc.jitterDelay(); d > 0 {
		timer := sc.clock.NewTimer(d)
		select {
		case <-timer.Chan():
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
	for {
		// Each period is the interval plus up to 10% of jitter, timed from
		// the start of the tick (a slow tick does not stretch the period).
		// The timer exists before the tick runs, so the ticked signal tells
		// tests that advancing the clock will fire the next one.
		timer := sc.clock.NewTimer(sc.interval + sc.jitterDelay())
		sc.runTick(ctx)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.Chan():
		}
	}
}

// jitterDelay is a random delay of up to a tenth of the interval.
func (sc *schedulerLoop) jitterDelay() time.Duration {
	j := sc.interval / 10
	if j <= 0 || !sc.jitter {
		return 0
	}
	return time.Duration(rand.Int64N(int64(j)))
}

func (sc *schedulerLoop) runTick(ctx context.Context) {
	start := sc.clock.Now()
	defer func() {
		if r := recover(); r != nil {
			sc.metrics.SchedulerPanics.WithLabelValues(sc.name).Inc()
			sc.metrics.Schedulers.Ran(sc.name, sc.clock.Now(), false)
			sc.log.ErrorContext(ctx, "scheduler tick panicked", "code", dockettype.CodeInternal)
		}
		sc.signals.ticked.signal(struct{}{})
	}()
	err := sc.tick(ctx)
	sc.metrics.SchedulerTick.WithLabelValues(sc.name).Observe(sc.clock.Since(start).Seconds())
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		sc.metrics.SchedulerErrors.WithLabelValues(sc.name).Inc()
		sc.metrics.Schedulers.Ran(sc.name, sc.clock.Now(), false)
		storefailure.Count(sc.metrics.StoreErrors, sc.name, err)
		sc.log.WarnContext(ctx, "scheduler tick failed", storefailure.Attrs(err)...)
		return
	}
	sc.metrics.SchedulerTicks.WithLabelValues(sc.name).Inc()
	sc.metrics.Schedulers.Ran(sc.name, sc.clock.Now(), true)
}

// query bounds one store call.
func (sc *schedulerLoop) query(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, sc.queryTimeout)
}

// scanConfig bounds one tick of a scheduler that scans in batches.
type scanConfig struct {
	Batch   int           // rows per batch
	Batches int           // most batches per tick; the rest waits for the next tick
	Pause   time.Duration // between two batches, so that other writers get their turn
}

// batches runs batch until it reports that nothing is left, at most
// cfg.Batches times, pausing cfg.Pause on the clock between two batches.
// The pause ends early when the scheduler stops.
func (sc *schedulerLoop) batches(ctx context.Context, cfg scanConfig, batch func(ctx context.Context) (more bool, err error)) error {
	for n := 1; ; n++ {
		more, err := batch(ctx)
		if err != nil || !more || n >= cfg.Batches {
			return err
		}
		timer := sc.clock.NewTimer(cfg.Pause)
		sc.signals.paused.signal(cfg.Pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.Chan():
		}
	}
}
