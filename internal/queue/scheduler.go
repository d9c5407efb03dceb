package queue

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/startstop"
	"github.com/docket-dev/docket/internal/store"
)

// scheduler is the loop the three maintenance schedulers share: its own
// goroutine, its own jittered timer, its own store fork (connection budget), a
// per-query timeout, panic recovery and counters. Nothing is shared between
// two schedulers, so a slow or blocked recovery scan cannot delay heartbeats
// or deadlines.
type scheduler struct {
	name     string
	svc      *Service
	store    store.Store // this scheduler's fork, set by Service.Start
	interval time.Duration
	tick     func(ctx context.Context) error
	log      *slog.Logger
	loop     startstop.Loop

	// afterTick, when set (tests), is called after every tick.
	afterTick func()
}

func (sc *scheduler) Start(ctx context.Context) error {
	sc.log = sc.svc.cfg.Logger.With("component", sc.name) // not svc.log: it has component=queue already
	sc.svc.metrics.Schedulers.Started(sc.name, sc.svc.clock.Now())
	return sc.loop.Start(ctx, sc.run)
}

func (sc *scheduler) Stop() { sc.loop.Stop() }

func (sc *scheduler) run(ctx context.Context) {
	clock := sc.svc.clock
	// Stagger the first tick so that nodes started together do not scan
	// together.
	if d := sc.jitter(); d > 0 {
		select {
		case <-clock.After(d):
		case <-ctx.Done():
			return
		}
	}
	for {
		// Each period is the interval plus up to 10% of jitter, timed from
		// the start of the tick (a slow tick does not stretch the period).
		// The timer exists before the tick runs, so a tick's afterTick hook
		// tells tests that advancing the clock will fire the next one.
		timer := clock.NewTimer(sc.interval + sc.jitter())
		sc.runTick(ctx)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.Chan():
		}
	}
}

// jitter is a random delay of up to a tenth of the interval (none in tests
// that drive the clock by exact intervals).
func (sc *scheduler) jitter() time.Duration {
	j := sc.interval / 10
	if j <= 0 || sc.svc.cfg.noJitter {
		return 0
	}
	return time.Duration(rand.Int64N(int64(j)))
}

func (sc *scheduler) runTick(ctx context.Context) {
	m := sc.svc.metrics
	start := sc.svc.clock.Now()
	defer func() {
		if r := recover(); r != nil {
			m.SchedulerPanics.WithLabelValues(sc.name).Inc()
			m.Schedulers.Ran(sc.name, sc.svc.clock.Now(), false)
			sc.log.ErrorContext(ctx, "scheduler tick panicked", "code", dockettype.CodeInternal)
		}
		if sc.afterTick != nil {
			sc.afterTick()
		}
	}()
	err := sc.tick(ctx)
	m.SchedulerTick.WithLabelValues(sc.name).Observe(sc.svc.clock.Since(start).Seconds())
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		m.SchedulerErrors.WithLabelValues(sc.name).Inc()
		m.Schedulers.Ran(sc.name, sc.svc.clock.Now(), false)
		m.StoreErrors.WithLabelValues(sc.name).Inc()
		sc.log.WarnContext(ctx, "scheduler tick failed", "code", dockettype.CodeStoreUnavailable)
		return
	}
	m.SchedulerTicks.WithLabelValues(sc.name).Inc()
	m.Schedulers.Ran(sc.name, sc.svc.clock.Now(), true)
}

// query bounds one store call.
func (sc *scheduler) query(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, sc.svc.cfg.QueryTimeout)
}
