package queue

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/leasetoken"
	"github.com/docket-dev/docket/internal/store"
)

// Worker API limits (docs/worker-protocol.md).
const (
	MaxClaimTasks        = 1000   // most tasks one claim returns
	MaxClaimWorkflows    = 100    // most workflows one claim names
	MaxHeartbeatLeases   = 10_000 // most leases one heartbeat renews
	MaxFinishItems       = 1000   // most items one finish, evidence or release call carries
	MaxRemoteMessage     = 1024   // most bytes of a remote failure's message
	maxRemoteWorkerID    = 128
	maxRemoteSDK         = 64
	remoteHeartbeatLimit = time.Second // the longest heartbeat interval told to workers
)

// LeaseStatus is the answer for one lease or item of a worker call.
type LeaseStatus string

const (
	LeaseOK        LeaseStatus = "ok"         // renewed, or written
	LeaseCancelled LeaseStatus = "cancelled"  // the task was cancelled: stop
	LeaseTimedOut  LeaseStatus = "timed_out"  // the task's deadline passed: stop
	LeaseLost      LeaseStatus = "lease_lost" // the lease is not current (or the token is not valid): stop
	LeaseConflict  LeaseStatus = "conflict"   // a different outcome was already written under this lease
)

// RemoteWorker is the caller of the worker API, as its key and its request
// name it. The key's fields come from authentication, never the body.
type RemoteWorker struct {
	KeyID      string
	Tenant     string // the key's tenant
	AllTenants bool   // the key serves every tenant
	ID         string // the worker's own name (worker_id), or the key ID
	SDK        string
	Slots      int
}

// serves reports whether the worker's key may hold a lease of tenant.
func (w *RemoteWorker) serves(tenant string) bool { return w.AllTenants || w.Tenant == tenant }

// claimTenant is the tenant a claim is limited to ("" for every tenant).
func (w *RemoteWorker) claimTenant() string {
	if w.AllTenants {
		return ""
	}
	return w.Tenant
}

// RemoteClaimRequest asks for tasks of remote workflows.
type RemoteClaimRequest struct {
	Worker    RemoteWorker
	Workflows []string
	Pool      dockettype.Pool // "": both pools
	Max       int             // 0: 1
	Wait      time.Duration   // long poll; 0: answer at once
}

// RemoteTask is one claimed task as a remote worker receives it: the
// binding the server made, the input as admitted, and the lease token.
type RemoteTask struct {
	Lease string
	Task  *dockettype.Task
	Input []byte
	// Traceparent is the W3C traceparent of the task's span
	// (tracing.Traceparent): the worker's spans of this attempt are its
	// children, in the task's trace.
	Traceparent string
}

// RemoteClaimResult answers a claim.
type RemoteClaimResult struct {
	Tasks             []RemoteTask
	LeaseTTL          time.Duration
	HeartbeatInterval time.Duration
}

// leaseKeys holds the installation's lease-token secret, read (or made) on
// first use and kept.
type leaseKeys struct {
	mu  sync.Mutex
	key []byte
}

type leaseKeyStore interface {
	LeaseKey(ctx context.Context, candidate []byte) ([]byte, error)
}

func (k *leaseKeys) get(ctx context.Context, st leaseKeyStore) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil {
		return k.key, nil
	}
	candidate := make([]byte, 32)
	if _, err := rand.Read(candidate); err != nil {
		return nil, err
	}
	key, err := st.LeaseKey(ctx, candidate)
	if err != nil {
		return nil, err
	}
	k.key = key
	return key, nil
}

// remoteStore is what the worker API calls in the store.
type remoteStore interface {
	Claimer
	store.Finisher
	store.LeaseKeeper
	leaseKeyStore
	dependencyReader
	GetTask(ctx context.Context, params *store.GetTaskParams) (*dockettype.Task, error)
}

// Claimer is the store's claim call.
type Claimer = store.Claimer

// heartbeatInterval is what workers are told: a third of the lease TTL, at
// most a second, so that a cancel reaches a remote handler within about a
// second whatever the TTL.
func (s *Service) heartbeatInterval() time.Duration {
	return min(s.cfg.LeaseTTL/3, remoteHeartbeatLimit)
}

// verified is a lease token that checked out.
type verified struct {
	token  string
	claims leasetoken.Claims
}

func (v verified) lease() store.Lease {
	return store.Lease{TaskID: v.claims.TaskID, Epoch: v.claims.Epoch}
}

// verify checks tokens for the worker's key. The second result holds, per
// token, its claims or, when invalid (altered, forged, another key's, or a
// tenant the key does not serve), ok false: counted and answered lease_lost.
func (s *Service) verify(key []byte, w *RemoteWorker, tokens []string) ([]verified, []bool) {
	out := make([]verified, len(tokens))
	ok := make([]bool, len(tokens))
	for i, tok := range tokens {
		c, err := leasetoken.Verify(key, w.KeyID, tok)
		if err != nil || !w.serves(c.Tenant) {
			s.metrics.FencingRejections.WithLabelValues("forged_lease").Inc()
			continue
		}
		out[i], ok[i] = verified{token: tok, claims: c}, true
	}
	return out, ok
}

// remoteStore is the store fork the worker API uses (its own connection
// budget), or nil when the service is not running.
func (s *Service) remoteStore() remoteStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return nil
	}
	return s.run.remote
}

// errStopping answers a worker call that reaches a node that is stopping.
var errStopping = &dockettype.Error{Code: dockettype.CodeStoreUnavailable,
	Message: "this node is stopping; retry (another node will answer)", RetryAfter: time.Second}

// remote returns the worker API's store and lease key.
func (s *Service) remote(ctx context.Context) (remoteStore, []byte, error) {
	st := s.remoteStore()
	if st == nil {
		return nil, nil, errStopping
	}
	key, err := s.leaseKeys.get(ctx, st)
	if err != nil {
		return nil, nil, s.storeFailure(ctx, "lease_key", err)
	}
	return st, key, nil
}
