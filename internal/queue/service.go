package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/metrics"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/storefailure"
)

// Store is what the ExecutionService needs from persistence: the API's
// reads, admission, cancellation, evidence writes and readiness, and Fork,
// which gives each pool and scheduler its own connection budget. Each
// component then declares the few calls it makes (claimer, finisher,
// leaseRecoverer, …) and gets its fork as that. Every store.Store is one.
type Store interface {
	Admit(ctx context.Context, params *store.AdmitParams) ([]store.AdmitResult, error)
	AppendEvidence(ctx context.Context, params *store.AppendEvidenceParams) error
	Cancel(ctx context.Context, params *store.CancelParams) (*store.CancelResult, error)
	GetTask(ctx context.Context, params *store.GetTaskParams) (*dockettype.Task, error)
	ListTasks(ctx context.Context, params *store.ListTasksParams) ([]*dockettype.Task, error)
	ListEvents(ctx context.Context, params *store.GetTaskParams) ([]dockettype.Event, error)
	ListEvidence(ctx context.Context, params *store.GetTaskParams) ([]dockettype.Evidence, error)
	DependencyResults(ctx context.Context, params *store.GetTaskParams) ([]dockettype.DependencyResult, error)
	TaskStates(ctx context.Context, params *store.TaskStatesParams) (map[string]dockettype.State, error)
	GetInput(ctx context.Context, params *store.GetTaskParams) ([]byte, error)
	Ping(ctx context.Context) error
	Fork(name string, opts store.ForkOptions) (store.Store, error)
	store.Schedules
	store.Failures
	SetPaused(ctx context.Context, params *store.SetPausedParams) ([]store.Pause, error)
	UpdateFlowRule(ctx context.Context, params *store.UpdateFlowRuleParams) (*store.FlowRule, error)
	GetFlowRule(ctx context.Context, target store.FlowTarget) (*store.FlowRule, error)
	ListFlowRules(ctx context.Context) ([]*store.FlowRule, error)
}

// Service is the ExecutionService: admission, reads and cancellation for the
// API, plus the pools and schedulers that run tasks.
//
// New builds what lives as long as the Service: the admitter, the lease
// registry, the long-poll waiters and the pools' wake-ups. Start forks the
// store and builds the running parts, each given its fork and the few
// collaborators it uses; Stop stops and drops them.
type Service struct {
	baseService
	cfg     Config
	store   Store // the API's handle; pools and schedulers use forks
	runtime Runtime
	metrics *metrics.Metrics
	spans   spans

	failures storefailure.Reporter // the API's store errors, answered, counted and logged

	leases   *leaseRegistry
	waiters  *waiters
	admitter *admitter
	// lastAdmit is when this node last admitted a submission (UnixNano, on
	// its clock): a bulk job takes smaller batches while it is recent.
	lastAdmit atomic.Int64
	wakeups   *queueWakeups
	draining  *drainSignal

	// The worker API's state: the lease-token key and the workers seen.
	leaseKeys leaseKeys
	workers   *workerRegistry

	// signals lets tests wait on the components; set before Start.
	signals *testSignals

	synced *syncedClock // nil unless Config.SyncClock

	ready readiness

	mu  sync.Mutex
	run *running // nil when stopped
}

// running is what Start builds and Stop tears down.
type running struct {
	forks      []store.Store
	completers map[dockettype.Pool]*completer
	pools      map[dockettype.Pool]*pool
	recovery   *RecoveryScheduler
	heartbeat  *HeartbeatScheduler
	deadline   *DeadlineScheduler
	cleaner    *Cleaner         // nil when Retention is Unlimited (< 0)
	vacuum     *VacuumScheduler // nil unless the store vacuums (store.Vacuumer) and VacuumInterval > 0
	schedules  *ScheduleScheduler
	bulk       *BulkScheduler
	listener   *notificationListener // nil when the store sends no notifications
	clockSync  *clockSync            // nil unless Config.SyncClock
	remote     store.Store           // the worker API's fork
	workers    *WorkerRegistryFlusher
}

// New builds a Service. It starts nothing: call Start.
func New(st Store, rt Runtime, cfg Config) (*Service, error) {
	if st == nil || rt == nil {
		return nil, errors.New("queue: store and runtime are required")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	var synced *syncedClock
	if cfg.SyncClock {
		// Every component reads the corrected clock; the sync reads the
		// node's own.
		synced = &syncedClock{Clock: cfg.Clock}
		cfg.Clock = synced
	}
	s := &Service{
		baseService: newBaseService(cfg.Logger, cfg.Clock, "queue"),
		synced:      synced,
		cfg:         cfg,
		store:       st,
		runtime:     rt,
		metrics:     cfg.Metrics,
		ready:       readiness{interval: cfg.ReadyProbeInterval},
		spans:       newSpans(cfg.TracerProvider),
		leases:      newLeaseRegistry(),
		draining:    newDrainSignal(),
		wakeups:     newQueueWakeups(),
		workers:     newWorkerRegistry(),
		signals:     &testSignals{},
	}
	s.failures = storefailure.Reporter{Log: s.log, Errors: cfg.Metrics.StoreErrors, RetryAfter: cfg.RetryAfter}
	s.waiters = newWaiters()
	s.admitter = newAdmitter(newBaseService(cfg.Logger, cfg.Clock, "admitter"), st, cfg.AdmitBatch, cfg.AdmitCommitters, cfg.QueryTimeout)
	return s, nil
}

// Config returns the effective configuration (defaults applied).
func (s *Service) Config() Config { return s.cfg }

// Metrics returns the service's collectors.
func (s *Service) Metrics() *metrics.Metrics { return s.metrics }

// Start starts admission, each pool with its own completer, and the three
// schedulers, each on its own store fork (its connection budget).
//
// ctx bounds the start (the clock sync) and gives its values to the
// running parts, not its lifetime: only Stop stops them, in its order. A
// caller that cancels ctx on SIGTERM and then calls Stop (as `docket
// serve` and Server.Run do) still gets the grace period, the released
// leases and every outcome written.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run != nil {
		return nil
	}
	s.draining.reset()
	r, err := s.build()
	if err != nil {
		return err
	}
	// The clock is corrected before anything reads it.
	if r.clockSync != nil {
		if err := r.clockSync.syncAtStart(ctx); err != nil {
			closeForks(r.forks)
			return err
		}
	}
	life := context.WithoutCancel(ctx)
	starts := []func(context.Context) error{s.admitter.Start}
	for _, p := range dockettype.Pools {
		starts = append(starts, r.completers[p].Start, r.pools[p].Start)
	}
	starts = append(starts, r.recovery.Start, r.heartbeat.Start, r.deadline.Start, r.schedules.Start, r.bulk.Start)
	if r.cleaner != nil {
		starts = append(starts, r.cleaner.Start)
	}
	if r.vacuum != nil {
		starts = append(starts, r.vacuum.Start)
	}
	starts = append(starts, r.workers.Start)
	if r.listener != nil {
		starts = append(starts, r.listener.Start)
	}
	if r.clockSync != nil {
		starts = append(starts, r.clockSync.Start)
	}
	for _, start := range starts {
		if err := start(life); err != nil {
			s.stopAll(r)
			return err
		}
	}
	s.run = r
	return nil
}

// build forks the store and wires the running components. It starts no
// goroutine.
func (s *Service) build() (*running, error) {
	cfg := s.cfg
	r := &running{completers: map[dockettype.Pool]*completer{}, pools: map[dockettype.Pool]*pool{}}
	fork := func(name string, opts store.ForkOptions) (store.Store, error) {
		f, err := s.store.Fork(name, opts)
		if err != nil {
			return nil, fmt.Errorf("queue: fork store for %s: %w", name, err)
		}
		r.forks = append(r.forks, f)
		return f, nil
	}
	base := func(name string, attrs ...any) baseService {
		return newBaseService(cfg.Logger, cfg.Clock, name, attrs...)
	}
	sched := func(interval time.Duration) schedulerConfig {
		return schedulerConfig{Interval: interval, QueryTimeout: cfg.QueryTimeout, Jitter: !cfg.noJitter}
	}
	scan := scanConfig{Batch: cfg.ScanBatch, Batches: cfg.ScanBatches, Pause: cfg.ScanPause}

	fail := func(err error) (*running, error) {
		closeForks(r.forks)
		return nil, err
	}
	for _, p := range dockettype.Pools {
		// The pool's claims and its completer's finishes share the pool's
		// fork; the offline pool's writes are background writes.
		f, err := fork("pool-"+string(p), store.ForkOptions{MaxConns: 2, Background: p == dockettype.PoolOffline})
		if err != nil {
			return fail(err)
		}
		c := newCompleter(base("completer", "pool", p), p, f, s.leases, s.waiters, s.metrics, s.draining,
			completerConfig{Batch: cfg.FinishBatch, QueryTimeout: cfg.QueryTimeout, FlushFor: cfg.ShutdownFlush}, s.signals)
		w := newWorker(base("worker", "pool", p), p, s.runtime, s.store, s.leases, c, s.metrics,
			workerConfig{RetryBackoffBase: cfg.RetryBackoffBase, RetryBackoffMax: cfg.RetryBackoffMax,
				QueryTimeout: cfg.QueryTimeout, MaxResultBytes: cfg.MaxResultBytes}, s.signals)
		c.spans, w.spans = s.spans, s.spans
		pc := cfg.pool(p)
		r.completers[p] = c
		r.pools[p] = newPool(base("pool", "pool", p), p, f, w, s.metrics, s.wakeups.pool(p), poolConfig{
			NodeID: cfg.NodeID, Workers: pc.Workers, ClaimBatch: cfg.ClaimBatch, LeaseTTL: cfg.LeaseTTL,
			PollInterval: cfg.PollInterval, QueryTimeout: cfg.QueryTimeout,
			ShutdownGrace: cfg.ShutdownGrace, ShutdownAbandon: cfg.ShutdownAbandon,
		}, s.signals)
		r.pools[p].spans = s.spans
		if pc.Workers > 0 {
			c.slots = r.pools[p]
		}
	}
	one := store.ForkOptions{MaxConns: 1}
	f, err := fork("recovery", one)
	if err != nil {
		return fail(err)
	}
	r.recovery = newRecoveryScheduler(base("recovery"), sched(cfg.RecoveryInterval), scan, f,
		s.leases, s.waiters, s.wakeups, s.metrics, &s.signals.recovery)
	if f, err = fork("heartbeat", one); err != nil {
		return fail(err)
	}
	r.heartbeat = newHeartbeatScheduler(base("heartbeat"), sched(cfg.HeartbeatInterval), cfg.LeaseTTL, cfg.HeartbeatBatch, f,
		s.leases, s.metrics, &s.signals.heartbeat)
	if f, err = fork("deadline", one); err != nil {
		return fail(err)
	}
	r.deadline = newDeadlineScheduler(base("deadline"), sched(cfg.DeadlineInterval), scan, f,
		s.leases, s.waiters, s.metrics, &s.signals.deadline)
	if s.synced != nil {
		if f, err = fork("clock", one); err != nil {
			return fail(err)
		}
		dc, ok := f.(databaseClock)
		if !ok {
			return fail(errors.New("queue: SyncClock needs a store with DatabaseTime"))
		}
		r.clockSync = &clockSync{baseService: newBaseService(cfg.Logger, s.synced.Clock, "clock"), clock: s.synced,
			store: dc, metrics: s.metrics, interval: cfg.ClockSyncInterval, warnAbove: time.Second}
	}
	if l, ok := s.store.(store.Listener); ok {
		r.listener = newNotificationListener(base("listener"), l, s.wakeups, s.waiters)
	}
	// The worker API's calls share a fork of their own, so that a flood of
	// remote claims and finishes cannot take the connections the API's
	// reads and the schedulers need.
	if r.remote, err = fork("remote", store.ForkOptions{MaxConns: 4}); err != nil {
		return fail(err)
	}
	if f, err = fork("workers", one); err != nil {
		return fail(err)
	}
	r.workers = newWorkerRegistryFlusher(base("workers"), sched(cfg.WorkerFlushInterval), f, s.workers, cfg.LeaseTTL,
		s.metrics, &s.signals.workers)
	if f, err = fork("schedules", one); err != nil {
		return fail(err)
	}
	r.schedules = newScheduleScheduler(base("schedules"), sched(cfg.ScheduleInterval), cfg.ScheduleBatch, cfg.ScheduleGrace, f,
		s.Submit, s.metrics, &s.signals.schedules)
	if f, err = fork("bulk", one); err != nil {
		return fail(err)
	}
	r.bulk = newBulkScheduler(base("bulk"), sched(cfg.BulkInterval), bulkConfig{Owner: cfg.NodeID, LeaseTTL: cfg.BulkLeaseTTL,
		Batch: cfg.BulkBatch, BusyBatch: cfg.BulkBusyBatch, Batches: cfg.BulkBatches, Pause: cfg.BulkPause,
		Busy: s.admittedSince}, f, s.applyBulk, s.metrics, &s.signals.bulk)
	if cfg.Retention > 0 {
		if f, err = fork("cleaner", one); err != nil {
			return fail(err)
		}
		r.cleaner = newCleaner(base("cleaner"), sched(cfg.CleanerInterval), scan, cfg.Retention, f, s.metrics, &s.signals.cleaner)
	}
	if cfg.VacuumInterval > 0 {
		if f, err = fork("vacuum", one); err != nil {
			return fail(err)
		}
		if v, ok := f.(store.Vacuumer); ok {
			r.vacuum = newVacuumScheduler(base("vacuum"), sched(cfg.VacuumInterval), v, s.metrics, &s.signals.vacuum)
		} else { // the database keeps the table small on its own
			r.forks = r.forks[:len(r.forks)-1]
			_ = f.Close()
		}
	}
	return r, nil
}

// Stop stops claiming, lets running tasks finish for up to ShutdownGrace,
// cancels the rest (their leases are handed back: the tasks are queued at
// once, the attempt not charged), abandons workers that ignore cancellation
// for ShutdownAbandon more (their leases lapse), flushes finished outcomes
// and stops the schedulers. It is idempotent.
func (s *Service) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return
	}
	s.Drain()
	s.stopAll(s.run)
	s.run = nil
}

// stopAll stops the pools (concurrently: each has its own grace period),
// then their completers, which write what the workers handed over, then
// the rest, and releases the forks.
func (s *Service) stopAll(r *running) {
	// A stopping node fires no more schedules (the other nodes do).
	r.schedules.Stop()
	r.bulk.Stop()
	var wg sync.WaitGroup
	for _, p := range r.pools {
		wg.Go(p.Stop)
	}
	wg.Wait()
	for _, c := range r.completers {
		c.Stop()
	}
	s.admitter.Stop()
	r.recovery.Stop()
	r.heartbeat.Stop()
	r.deadline.Stop()
	if r.cleaner != nil {
		r.cleaner.Stop()
	}
	if r.vacuum != nil {
		r.vacuum.Stop()
	}
	r.workers.Stop()
	if r.listener != nil {
		r.listener.Stop()
	}
	if r.clockSync != nil {
		r.clockSync.Stop()
	}
	// Leases still held belong to abandoned workers or unwritten outcomes:
	// they lapse, and recovery runs those tasks again.
	s.leases.clear()
	closeForks(r.forks)
}

func closeForks(forks []store.Store) {
	for _, f := range forks {
		_ = f.Close()
	}
}

// Drain prepares for shutdown: long polls answer at once with the task as
// it is, so that an HTTP server can finish its requests. Stop calls it too.
func (s *Service) Drain() { s.draining.fire() }

// wake tells the claimers of q that work may be ready.
func (s *Service) wake(q store.Queue) { s.wakeups.wake(q) }

func (s *Service) wakeAll() { s.wakeups.wakeAll() }
