package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
)

// Service is the ExecutionService: admission, reads and cancellation for the
// API, plus the pools and schedulers that run tasks.
type Service struct {
	cfg     Config
	store   store.Store // the API's handle; pools and schedulers use forks
	runtime Runtime
	clock   clockwork.Clock
	log     *slog.Logger
	metrics *metrics.Metrics

	leases  *leaseRegistry
	waiters *waiters

	admitter  *admitter
	completer *completer
	pools     map[dockettype.Pool]*pool
	recovery  *RecoveryScheduler
	heartbeat *HeartbeatScheduler
	deadline  *DeadlineScheduler

	mu      sync.Mutex
	started bool
	forks   []store.Store

	// draining fires when Drain or Stop begins: long polls answer at once
	// and the completer stops retrying. A new one is made at each Start.
	draining atomic.Pointer[signal]
}

// signal is a one-shot broadcast.
type signal struct {
	once sync.Once
	ch   chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) fire()                 { s.once.Do(func() { close(s.ch) }) }
func (s *signal) done() <-chan struct{} { return s.ch }

// New builds a Service. It starts nothing: call Start.
func New(st store.Store, rt Runtime, cfg Config) (*Service, error) {
	if st == nil || rt == nil {
		return nil, errors.New("queue: store and runtime are required")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	s := &Service{
		cfg:     cfg,
		store:   st,
		runtime: rt,
		clock:   cfg.Clock,
		log:     cfg.Logger.With("component", "queue"),
		metrics: cfg.Metrics,
		leases:  newLeaseRegistry(),
		waiters: newWaiters(),
	}
	s.admitter = newAdmitter(s)
	s.completer = newCompleter(s)
	s.pools = map[dockettype.Pool]*pool{}
	for _, p := range dockettype.Pools {
		s.pools[p] = newPool(s, p, cfg.pool(p))
	}
	s.draining.Store(newSignal())
	s.recovery = newRecoveryScheduler(s)
	s.heartbeat = newHeartbeatScheduler(s)
	s.deadline = newDeadlineScheduler(s)
	return s, nil
}

// Config returns the effective configuration (defaults applied).
func (s *Service) Config() Config { return s.cfg }

// Metrics returns the service's collectors.
func (s *Service) Metrics() *metrics.Metrics { return s.metrics }

// Start starts admission, the completer, both pools and the three
// schedulers, each on its own store fork (its connection budget).
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil
	}
	fork := func(name string, conns int) (store.Store, error) {
		f, err := s.store.Fork(name, store.ForkOptions{MaxConns: conns, Background: name == "pool-"+string(dockettype.PoolOffline)})
		if err != nil {
			return nil, fmt.Errorf("queue: fork store for %s: %w", name, err)
		}
		s.forks = append(s.forks, f)
		return f, nil
	}
	s.draining.Store(newSignal())
	var err error
	if s.recovery.store, err = fork("recovery", 1); err != nil {
		return s.abortStart(err)
	}
	if s.heartbeat.store, err = fork("heartbeat", 1); err != nil {
		return s.abortStart(err)
	}
	if s.deadline.store, err = fork("deadline", 1); err != nil {
		return s.abortStart(err)
	}
	for _, p := range dockettype.Pools {
		if s.pools[p].store, err = fork("pool-"+string(p), 2); err != nil {
			return s.abortStart(err)
		}
	}
	starts := []func(context.Context) error{
		s.admitter.Start, s.completer.Start,
		s.pools[dockettype.PoolOnline].Start, s.pools[dockettype.PoolOffline].Start,
		s.recovery.Start, s.heartbeat.Start, s.deadline.Start,
	}
	for _, start := range starts {
		if err := start(ctx); err != nil {
			s.stopAll()
			return s.abortStart(err)
		}
	}
	s.started = true
	return nil
}

func (s *Service) abortStart(err error) error {
	for _, f := range s.forks {
		_ = f.Close()
	}
	s.forks = nil
	return err
}

// Stop stops claiming, lets running tasks finish for up to ShutdownGrace,
// cancels the rest (their leases lapse and recovery re-queues them), flushes
// finished outcomes and stops the schedulers. It is idempotent.
func (s *Service) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return
	}
	s.Drain()
	s.stopAll()
	for _, f := range s.forks {
		_ = f.Close()
	}
	s.forks = nil
	s.started = false
}

func (s *Service) stopAll() {
	var wg sync.WaitGroup
	for _, p := range s.pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Stop()
		}()
	}
	wg.Wait()
	s.completer.Stop()
	s.admitter.Stop()
	s.recovery.Stop()
	s.heartbeat.Stop()
	s.deadline.Stop()
}

// Drain prepares for shutdown: long polls answer at once with the task as
// it is, so that an HTTP server can finish its requests. Stop calls it too.
func (s *Service) Drain() { s.draining.Load().fire() }

// drainingC is closed once Drain or Stop has begun.
func (s *Service) drainingC() <-chan struct{} { return s.draining.Load().done() }

// Ready reports whether the store answers.
func (s *Service) Ready(ctx context.Context) error {
	if err := s.store.Ping(ctx); err != nil {
		return s.storeFailure(ctx, "ping", err)
	}
	return nil
}

// wake tells a pool that work may be ready.
func (s *Service) wake(p dockettype.Pool) {
	if pl, ok := s.pools[p]; ok {
		pl.wake()
	}
}

func (s *Service) wakeAll() {
	for _, pl := range s.pools {
		pl.wake()
	}
}
