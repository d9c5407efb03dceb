package queue

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Submission limits.
const (
	MaxIdempotencyKeyLen = 255
	MinPriority          = -1000
	MaxPriority          = 1000
)

// Submit admits a task for the principal's tenant, with the principal as
// author. Capacity, tenant limit and the idempotency binding are decided in
// one store transaction. Errors are *dockettype.Error values.
func (s *Service) Submit(ctx context.Context, p dockettype.Principal, req *SubmitRequest) (*SubmitResult, error) {
	item, err := s.admissionItem(ctx, p, req)
	if err != nil {
		return nil, err
	}
	if err := s.checkDependencies(ctx, p.Tenant, []*store.AdmitItem{item}); err != nil {
		return nil, err
	}
	out, err := s.admit(ctx, []*store.AdmitItem{item})
	if err != nil {
		return nil, err
	}
	if out[0].Err != nil {
		return nil, out[0].Err
	}
	return &SubmitResult{Task: out[0].Task, Replayed: out[0].Replayed}, nil
}

// admit admits items (one Submit's, or a SubmitBatch's valid ones) in one
// group of the admitter's group commit, and maps each item's outcome to its
// result: the task (new or replayed), or its refusal. Errors concern the
// whole group: the store failed and nothing of it was admitted.
func (s *Service) admit(ctx context.Context, items []*store.AdmitItem) ([]BatchResult, error) {
	start := s.clock.Now()
	s.lastAdmit.Store(start.UnixNano())
	sctx, span := s.spans.startAdmit(ctx, len(items))
	res, batch, err := s.admitter.admitGroup(sctx, items)
	s.spans.endAdmit(sctx, span, start, items, res, batch, err)
	if err != nil {
		return nil, s.storeFailure(ctx, "admit", err)
	}
	out := make([]BatchResult, len(items))
	woken := map[store.Queue]bool{}
	for i, r := range res {
		item, o := items[i], &out[i]
		switch r.Outcome {
		case store.Admitted:
			s.metrics.Submissions.WithLabelValues(string(item.Pool), "admitted").Inc()
			o.Task = r.Task
			if q := item.QueueOf(); !woken[q] {
				woken[q] = true
				s.wake(q)
			}
		case store.Replayed:
			s.metrics.Submissions.WithLabelValues(string(r.Task.Pool), "replayed").Inc()
			o.Task, o.Replayed = r.Task, true
		case store.IdempotencyConflict:
			o.Err = s.reject(dockettype.CodeIdempotencyConflict, "this Idempotency-Key was used with a different request", 0)
		case store.QueueFull:
			o.Err = s.reject(dockettype.CodeQueueFull, fmt.Sprintf("the %s pool is at capacity", item.Pool), s.cfg.RetryAfter)
		case store.TenantQuotaExceeded:
			o.Err = s.reject(dockettype.CodeTenantQuotaExceeded, "the tenant's in-flight limit is reached", s.cfg.RetryAfter)
		case store.StorageQuotaExceeded:
			o.Err = s.reject(dockettype.CodeStorageQuotaExceeded,
				"the tenant's storage quota is reached: finished tasks free it when retention deletes them", s.cfg.CleanerInterval)
		case store.SubmissionsPaused:
			o.Err = s.reject(dockettype.CodeSubmissionsPaused,
				"its pool, tenant or workflow is paused and refuses submissions until it is resumed", 0)
		case store.DependencyNotFound:
			o.Err = s.reject(dockettype.CodeInvalidDependency,
				"a task it depends on is not a task of this tenant, or an earlier item it names was not admitted", 0)
		default:
			return nil, s.reject(dockettype.CodeInternal, "unexpected admission outcome", 0)
		}
	}
	return out, nil
}

// admittedSince reports whether this node has admitted a submission (or
// tried to) since t.
func (s *Service) admittedSince(t time.Time) bool {
	return s.lastAdmit.Load() >= t.UnixNano()
}

// reject makes a refusal, counted by code.
func (s *Service) reject(code dockettype.Code, msg string, retryAfter time.Duration) *dockettype.Error {
	s.metrics.AdmissionRejections.WithLabelValues(string(code)).Inc()
	return &dockettype.Error{Code: code, Message: msg, RetryAfter: retryAfter}
}

// admissionItem validates a request and turns it into a store item.
func (s *Service) admissionItem(ctx context.Context, p dockettype.Principal, req *SubmitRequest) (*store.AdmitItem, error) {
	invalid := func(msg string) error { return s.reject(dockettype.CodeInvalidRequest, msg, 0) }
	if p.Tenant == "" || p.Name == "" {
		return nil, s.reject(dockettype.CodeUnauthenticated, "no authenticated principal", 0)
	}
	if err := ValidIdempotencyKey(req.IdempotencyKey); err != nil {
		return nil, invalid(err.Error())
	}
	if req.Pool != "" && !req.Pool.Valid() {
		return nil, invalid(`pool must be "online" or "offline"`)
	}
	// Milliseconds against milliseconds: a Duration made of a huge
	// timeout_ms would overflow before the comparison.
	if req.TimeoutMS < 0 || req.TimeoutMS > s.cfg.MaxTimeout.Milliseconds() {
		return nil, invalid(fmt.Sprintf("timeout_ms must be between 1 and %d (0 or absent: the default)", s.cfg.MaxTimeout.Milliseconds()))
	}
	if req.Priority < MinPriority || req.Priority > MaxPriority {
		return nil, invalid(fmt.Sprintf("priority must be between %d and %d", MinPriority, MaxPriority))
	}
	now := s.clock.Now()
	if !req.RunAt.IsZero() && req.RunAt.After(now.Add(s.cfg.MaxScheduleAhead)) {
		return nil, invalid(fmt.Sprintf("run_at must be at most %s ahead", s.cfg.MaxScheduleAhead))
	}
	if req.MaxAttempts < 0 || req.MaxAttempts > s.cfg.MaxAttemptsLimit {
		return nil, invalid(fmt.Sprintf("max_attempts must be between 1 and %d (0 or absent: the default)", s.cfg.MaxAttemptsLimit))
	}
	if err := validDependencies(req); err != nil {
		return nil, invalid(err.Error())
	}
	if req.ConcurrencyKey != "" && !dockettype.ValidConcurrencyKey(req.ConcurrencyKey) {
		return nil, invalid("concurrency_key must be 1 to 255 visible ASCII characters")
	}
	input := []byte("null")
	if len(req.Input) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, req.Input); err != nil {
			return nil, invalid("input is not valid JSON")
		}
		input = buf.Bytes()
	}
	traceID := req.TraceID
	sc := trace.SpanContextFromContext(ctx)
	if traceID == "" && sc.IsValid() {
		traceID = sc.TraceID().String() // the trace of the caller's span
	}
	if traceID == "" {
		traceID = NewTraceID()
	} else if !ValidTraceID(traceID) {
		return nil, invalid("trace id must be 32 lowercase hex digits, not all zero")
	}
	// The task's later spans follow its trace's sampled flag as the
	// request's span has it (a parent-based sampler's reading of the
	// caller's traceparent, or the sampler's own decision); sampled when
	// no span is in force (tracing off).
	unsampled := sc.IsValid() && sc.TraceID().String() == traceID && !sc.IsSampled()
	res, err := s.runtime.Resolve(ctx, req.Workflow)
	if err != nil {
		var de *dockettype.Error
		if errors.As(err, &de) {
			return nil, s.reject(de.Code, de.Message, 0)
		}
		// The configuration provider could not be read: treat like the store.
		return nil, s.storeFailure(ctx, "resolve_workflow", err)
	}
	pool := res.Pool
	if req.Pool != "" {
		pool = req.Pool
	}
	timeout := s.cfg.DefaultTimeout
	if res.DefaultTimeout > 0 {
		timeout = min(res.DefaultTimeout, s.cfg.MaxTimeout)
	}
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	maxAttempts := s.cfg.DefaultMaxAttempts
	if res.DefaultMaxAttempts > 0 {
		maxAttempts = min(res.DefaultMaxAttempts, s.cfg.MaxAttemptsLimit)
	}
	if req.MaxAttempts > 0 {
		maxAttempts = req.MaxAttempts
	}
	var queue store.Queue // the pool's own
	if res.Remote {
		queue = store.RemoteQueue(pool, req.Workflow)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, s.reject(dockettype.CodeInternal, "could not make a task id", 0)
	}
	// A scheduled task's deadline counts from when it may start.
	start := now
	if req.RunAt.After(now) {
		start = req.RunAt
	}
	return &store.AdmitItem{
		TaskID:         id.String(),
		Tenant:         p.Tenant,
		Author:         p.Name,
		IdempotencyKey: req.IdempotencyKey,
		RequestHash:    requestHash(req, input),
		Workflow:       req.Workflow,
		Pool:           pool,
		Priority:       req.Priority,
		MaxAttempts:    maxAttempts,
		DeadlineAt:     start.Add(timeout),
		RunAt:          req.RunAt,
		TraceID:        traceID,
		TraceUnsampled: unsampled,
		ConfigVersion:  res.ConfigVersion,
		Input:          input,
		Queue:          queue,
		ConcurrencyKey: req.ConcurrencyKey,
		PoolCapacity:   s.cfg.pool(pool).Capacity,
		StorageQuota:   s.cfg.StorageQuota,
		DependsOn:      req.DependsOn, // a batch resolves its keys (resolveBatchDependencies)

		RunOnDependencyFailure: req.OnDependencyFailure == OnDependencyFailureRun,
	}, nil
}

// requestHash identifies a request for idempotency: the same key with the
// same hash is a replay. It covers every client-chosen field as sent (the
// input with insignificant whitespace removed), not the server's defaults,
// so a replay matches even after the defaults change.
func requestHash(req *SubmitRequest, compactInput []byte) string {
	h := sha256.New()
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	field([]byte(req.Workflow))
	field([]byte(req.Pool))
	field(fmt.Appendf(nil, "%d/%d/%d", req.TimeoutMS, req.Priority, req.MaxAttempts))
	field(compactInput)
	if !req.RunAt.IsZero() {
		// Only when set, so that the hash of a request without run_at is
		// the one earlier versions stored.
		field([]byte("run_at=" + req.RunAt.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)))
	}
	if len(req.DependsOn) > 0 || req.OnDependencyFailure != "" {
		// Only when set, as run_at.
		field([]byte("on_dependency_failure=" + req.OnDependencyFailure))
		for _, d := range req.DependsOn {
			field([]byte(d))
		}
	}
	if req.ConcurrencyKey != "" {
		field([]byte("concurrency_key=" + req.ConcurrencyKey))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ValidIdempotencyKey checks a key: 1–255 visible ASCII characters.
func ValidIdempotencyKey(k string) error {
	if len(k) == 0 || len(k) > MaxIdempotencyKeyLen {
		return errors.New("Idempotency-Key must be 1 to 255 visible ASCII characters")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return errors.New("Idempotency-Key must be 1 to 255 visible ASCII characters")
		}
	}
	return nil
}

// NewTraceID returns a random W3C trace ID (32 lowercase hex digits).
func NewTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidTraceID reports whether id is a valid W3C trace ID.
func ValidTraceID(id string) bool {
	if len(id) != 32 || id == "00000000000000000000000000000000" {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
