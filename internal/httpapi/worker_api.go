package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
)

// workerPrefix starts every route of the worker API (role worker).
const workerPrefix = "/v1/worker/"

// RemoteWorkers is what the worker API needs from the ExecutionService.
// *queue.Service satisfies it.
type RemoteWorkers interface {
	ClaimRemote(ctx context.Context, req *queue.RemoteClaimRequest) (*queue.RemoteClaimResult, error)
	HeartbeatRemote(ctx context.Context, w *queue.RemoteWorker, leases []string) ([]queue.LeaseStatus, error)
	FinishRemote(ctx context.Context, w *queue.RemoteWorker, items []queue.RemoteOutcome) ([]queue.LeaseStatus, error)
	WriteRemoteEvidence(ctx context.Context, w *queue.RemoteWorker, items []queue.RemoteEvidence) ([]queue.LeaseStatus, error)
	ReleaseRemote(ctx context.Context, w *queue.RemoteWorker, leases []string) ([]queue.LeaseStatus, error)
	RemoteDependencies(ctx context.Context, w *queue.RemoteWorker, lease string) ([]dockettype.DependencyResult, queue.LeaseStatus, error)
}

// workerRoutes are the routes of the worker API, when enabled.
func (s *server) workerRoutes() []route {
	if s.remote == nil {
		return nil
	}
	return []route{
		{http.MethodPost, workerPrefix + "claim", s.workerKey(s.workerClaim)},
		{http.MethodPost, workerPrefix + "heartbeat", s.workerKey(s.workerHeartbeat)},
		{http.MethodPost, workerPrefix + "finish", s.workerKey(s.workerFinish)},
		{http.MethodPost, workerPrefix + "evidence", s.workerKey(s.workerEvidence)},
		{http.MethodPost, workerPrefix + "release", s.workerKey(s.workerRelease)},
		{http.MethodPost, workerPrefix + "dependencies", s.workerKey(s.workerDependencies)},
	}
}

// Claim bodies.
var claimFields = map[string]bool{"workflows": true, "pool": true, "max": true, "wait_ms": true,
	"worker_id": true, "slots": true, "sdk": true}

type claimBody struct {
	Workflows []string        `json:"workflows"`
	Pool      dockettype.Pool `json:"pool"`
	Max       int             `json:"max"`
	WaitMS    int64           `json:"wait_ms"`
	WorkerID  string          `json:"worker_id"`
	Slots     int             `json:"slots"`
	SDK       string          `json:"sdk"`
}

type claimedTaskBody struct {
	Lease       string           `json:"lease"`
	Task        *dockettype.Task `json:"task"`
	Input       json.RawMessage  `json:"input"`
	Traceparent string           `json:"traceparent,omitempty"`
}

type claimAnswer struct {
	Tasks       []claimedTaskBody `json:"tasks"`
	LeaseTTLMS  int64             `json:"lease_ttl_ms"`
	HeartbeatMS int64             `json:"heartbeat_ms"`
}

// leaseStatusBody is one lease's or item's answer.
type leaseStatusBody struct {
	Lease  string            `json:"lease"`
	Status queue.LeaseStatus `json:"status"`
}

// workerOf is the caller as the queue sees it: the key's identity from
// authentication, the worker's own name and SDK from the body.
func workerOf(p dockettype.Principal, id, sdk string, slots int) *queue.RemoteWorker {
	if id == "" {
		id = p.KeyID
	}
	return &queue.RemoteWorker{KeyID: p.KeyID, Tenant: p.Tenant, AllTenants: p.AllTenants, ID: id, SDK: sdk, Slots: slots}
}

// visibleASCII reports whether s is 1 to n visible ASCII characters.
func visibleASCII(s string, n int) bool {
	if len(s) == 0 || len(s) > n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// decodeWorkerBody reads a worker call's body strictly: one object with
// only the given members (spelled exactly), typed into dst.
func (s *server) decodeWorkerBody(w http.ResponseWriter, r *http.Request, fields map[string]bool, limit int64, dst any) (map[string]json.RawMessage, error) {
	raw, body, err := s.objectBody(w, r, fields, limit)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return nil, invalidRequest(fmt.Sprintf("the request body does not match the contract: %s", typeError(err)))
	}
	return raw, nil
}

// typeError names the member a JSON type error is about, and nothing of
// the value.
func typeError(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
		return fmt.Sprintf("%q has the wrong type", te.Field)
	}
	return "a member has the wrong type"
}

// workerClaim serves POST /v1/worker/claim.
func (s *server) workerClaim(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	var body claimBody
	if _, err := s.decodeWorkerBody(w, r, claimFields, s.maxBody, &body); err != nil {
		writeError(w, r, err)
		return
	}
	switch {
	case body.WorkerID != "" && !visibleASCII(body.WorkerID, 128):
		writeError(w, r, invalidRequest("worker_id must be 1 to 128 visible ASCII characters"))
		return
	case body.SDK != "" && !visibleASCII(body.SDK, 64):
		writeError(w, r, invalidRequest("sdk must be 1 to 64 visible ASCII characters"))
		return
	case body.Slots < 0 || body.Slots > 1_000_000:
		writeError(w, r, invalidRequest("slots must be between 0 and 1000000"))
		return
	case body.WaitMS < 0 || body.WaitMS > MaxWait.Milliseconds():
		writeError(w, r, invalidRequest(fmt.Sprintf("wait_ms must be between 0 and %d", MaxWait.Milliseconds())))
		return
	}
	for _, wf := range body.Workflows {
		if wf == "" || len(wf) > 128 {
			writeError(w, r, invalidRequest("each workflow name must be 1 to 128 bytes"))
			return
		}
	}
	wait := time.Duration(body.WaitMS) * time.Millisecond
	if wait > 0 {
		// Idle workers hold a request each: bounded apart from the
		// clients' long polls, so that neither can take the other's.
		if !s.workerWaits.acquire(p.KeyID) {
			writeError(w, r, &dockettype.Error{Code: dockettype.CodeTooManyRequests, RetryAfter: waitRetryAfter,
				Message: "too many idle workers are waiting at once; retry later"})
			return
		}
		defer s.workerWaits.release(p.KeyID)
	}
	res, err := s.remote.ClaimRemote(r.Context(), &queue.RemoteClaimRequest{
		Worker:    *workerOf(p, body.WorkerID, body.SDK, body.Slots),
		Workflows: body.Workflows, Pool: body.Pool, Max: body.Max, Wait: wait,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := claimAnswer{Tasks: make([]claimedTaskBody, len(res.Tasks)),
		LeaseTTLMS: res.LeaseTTL.Milliseconds(), HeartbeatMS: res.HeartbeatInterval.Milliseconds()}
	for i, t := range res.Tasks {
		out.Tasks[i] = claimedTaskBody{Lease: t.Lease, Task: t.Task, Input: json.RawMessage(t.Input), Traceparent: t.Traceparent}
	}
	writeJSON(w, r, http.StatusOK, out)
}

// Heartbeat and release bodies.
var leasesFields = map[string]bool{"leases": true, "worker_id": true}

type leasesBody struct {
	Leases   []string `json:"leases"`
	WorkerID string   `json:"worker_id"`
}

type leasesAnswer struct {
	Leases []leaseStatusBody `json:"leases"`
}

func (s *server) decodeLeases(w http.ResponseWriter, r *http.Request, p dockettype.Principal) (*queue.RemoteWorker, []string, bool) {
	var body leasesBody
	if _, err := s.decodeWorkerBody(w, r, leasesFields, s.maxBatchBody, &body); err != nil {
		writeError(w, r, err)
		return nil, nil, false
	}
	if body.WorkerID != "" && !visibleASCII(body.WorkerID, 128) {
		writeError(w, r, invalidRequest("worker_id must be 1 to 128 visible ASCII characters"))
		return nil, nil, false
	}
	return workerOf(p, body.WorkerID, "", 0), body.Leases, true
}

func answerLeases(w http.ResponseWriter, r *http.Request, leases []string, st []queue.LeaseStatus) {
	out := leasesAnswer{Leases: make([]leaseStatusBody, len(leases))}
	for i, l := range leases {
		out.Leases[i] = leaseStatusBody{Lease: l, Status: st[i]}
	}
	writeJSON(w, r, http.StatusOK, out)
}

// workerHeartbeat serves POST /v1/worker/heartbeat.
func (s *server) workerHeartbeat(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	worker, leases, ok := s.decodeLeases(w, r, p)
	if !ok {
		return
	}
	st, err := s.remote.HeartbeatRemote(r.Context(), worker, leases)
	if err != nil {
		writeError(w, r, err)
		return
	}
	answerLeases(w, r, leases, st)
}

// workerRelease serves POST /v1/worker/release.
func (s *server) workerRelease(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	worker, leases, ok := s.decodeLeases(w, r, p)
	if !ok {
		return
	}
	st, err := s.remote.ReleaseRemote(r.Context(), worker, leases)
	if err != nil {
		writeError(w, r, err)
		return
	}
	answerLeases(w, r, leases, st)
}

// Finish bodies.
var (
	itemsFields   = map[string]bool{"items": true, "worker_id": true}
	finishFields  = map[string]bool{"lease": true, "outcome": true, "result": true, "error": true}
	failureFields = map[string]bool{"code": true, "message": true, "retryable": true}
)

type itemsBody struct {
	Items    []json.RawMessage `json:"items"`
	WorkerID string            `json:"worker_id"`
}

type finishItemBody struct {
	Lease   string          `json:"lease"`
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	} `json:"error"`
}

type itemsAnswer struct {
	Items []leaseStatusBody `json:"items"`
}

func answerItems(w http.ResponseWriter, r *http.Request, leases []string, st []queue.LeaseStatus) {
	out := itemsAnswer{Items: make([]leaseStatusBody, len(leases))}
	for i, l := range leases {
		out.Items[i] = leaseStatusBody{Lease: l, Status: st[i]}
	}
	writeJSON(w, r, http.StatusOK, out)
}

// decodeItems reads an {"items":[…]} body, each item strictly with fields.
func (s *server) decodeItems(w http.ResponseWriter, r *http.Request, fields map[string]bool) (*itemsBody, bool) {
	var body itemsBody
	if _, err := s.decodeWorkerBody(w, r, itemsFields, s.maxBatchBody, &body); err != nil {
		writeError(w, r, err)
		return nil, false
	}
	if len(body.Items) > queue.MaxFinishItems {
		writeError(w, r, invalidRequest(fmt.Sprintf("at most %d items per call", queue.MaxFinishItems)))
		return nil, false
	}
	if body.WorkerID != "" && !visibleASCII(body.WorkerID, 128) {
		writeError(w, r, invalidRequest("worker_id must be 1 to 128 visible ASCII characters"))
		return nil, false
	}
	for i, it := range body.Items {
		if _, err := decodeObject(it, fields, fmt.Sprintf("item %d", i)); err != nil {
			writeError(w, r, err)
			return nil, false
		}
	}
	return &body, true
}

// workerFinish serves POST /v1/worker/finish.
func (s *server) workerFinish(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	body, ok := s.decodeItems(w, r, finishFields)
	if !ok {
		return
	}
	items := make([]queue.RemoteOutcome, len(body.Items))
	leases := make([]string, len(body.Items))
	for i, raw := range body.Items {
		var it finishItemBody
		if err := json.Unmarshal(raw, &it); err != nil {
			writeError(w, r, invalidRequest(fmt.Sprintf("item %d: %s", i, typeError(err))))
			return
		}
		if it.Error != nil {
			if _, err := decodeObject(itemMember(raw, "error"), failureFields, fmt.Sprintf("item %d's error", i)); err != nil {
				writeError(w, r, err)
				return
			}
		}
		leases[i] = it.Lease
		switch {
		case it.Outcome == "succeeded" && it.Error == nil:
			items[i] = queue.RemoteOutcome{Lease: it.Lease, Succeeded: true, Result: it.Result}
		case it.Outcome == "failed" && it.Error != nil && it.Result == nil:
			if len(it.Error.Message) > queue.MaxRemoteMessage {
				writeError(w, r, invalidRequest(fmt.Sprintf("item %d: error.message is over %d bytes", i, queue.MaxRemoteMessage)))
				return
			}
			items[i] = queue.RemoteOutcome{Lease: it.Lease, Failure: queue.RemoteFailure{
				Code: dockettype.Code(it.Error.Code), Message: it.Error.Message, Retryable: it.Error.Retryable}}
		default:
			writeError(w, r, invalidRequest(fmt.Sprintf(`item %d: "outcome" must be "succeeded" (with "result") or "failed" (with "error")`, i)))
			return
		}
	}
	st, err := s.remote.FinishRemote(r.Context(), workerOf(p, body.WorkerID, "", 0), items)
	if err != nil {
		writeError(w, r, err)
		return
	}
	answerItems(w, r, leases, st)
}

// itemMember returns one member of a JSON object already checked by
// decodeObject.
func itemMember(raw json.RawMessage, name string) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return m[name]
}

// Evidence bodies.
var evidenceFields = map[string]bool{"lease": true, "kind": true, "body": true}

type evidenceItemBody struct {
	Lease string          `json:"lease"`
	Kind  string          `json:"kind"`
	Body  json.RawMessage `json:"body"`
}

// workerEvidence serves POST /v1/worker/evidence.
func (s *server) workerEvidence(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	body, ok := s.decodeItems(w, r, evidenceFields)
	if !ok {
		return
	}
	items := make([]queue.RemoteEvidence, len(body.Items))
	leases := make([]string, len(body.Items))
	for i, raw := range body.Items {
		var it evidenceItemBody
		if err := json.Unmarshal(raw, &it); err != nil {
			writeError(w, r, invalidRequest(fmt.Sprintf("item %d: %s", i, typeError(err))))
			return
		}
		leases[i] = it.Lease
		items[i] = queue.RemoteEvidence{Lease: it.Lease, Kind: it.Kind, Body: it.Body}
	}
	st, err := s.remote.WriteRemoteEvidence(r.Context(), workerOf(p, body.WorkerID, "", 0), items)
	if err != nil {
		writeError(w, r, err)
		return
	}
	answerItems(w, r, leases, st)
}

// Dependencies bodies.
var dependenciesFields = map[string]bool{"lease": true, "worker_id": true}

type dependenciesBody struct {
	Lease    string `json:"lease"`
	WorkerID string `json:"worker_id"`
}

type dependenciesAnswer struct {
	Status       queue.LeaseStatus             `json:"status"`
	Dependencies []dockettype.DependencyResult `json:"dependencies"`
}

// workerDependencies serves POST /v1/worker/dependencies: the outcome of
// each task the leased task depends on.
func (s *server) workerDependencies(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	var body dependenciesBody
	if _, err := s.decodeWorkerBody(w, r, dependenciesFields, s.maxBody, &body); err != nil {
		writeError(w, r, err)
		return
	}
	if body.Lease == "" {
		writeError(w, r, invalidRequest(`"lease" is required`))
		return
	}
	deps, status, err := s.remote.RemoteDependencies(r.Context(), workerOf(p, body.WorkerID, "", 0), body.Lease)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if deps == nil {
		deps = []dockettype.DependencyResult{}
	}
	writeJSON(w, r, http.StatusOK, dependenciesAnswer{Status: status, Dependencies: deps})
}
