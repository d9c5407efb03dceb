package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
)

// FailureAdmin is what the bulk actions and the dead-letter view need.
// *queue.Service satisfies it; its errors are *dockettype.Error values.
// asAdmin is true on the admin API's routes: any tenant's jobs and tasks.
type FailureAdmin interface {
	StartBulk(ctx context.Context, p dockettype.Principal, asAdmin bool, req *queue.BulkRequest) (*queue.BulkJob, error)
	GetBulk(ctx context.Context, p dockettype.Principal, asAdmin bool, id string) (*queue.BulkJob, error)
	CancelBulk(ctx context.Context, p dockettype.Principal, asAdmin bool, id string) (*queue.BulkJob, error)
	DeadLetters(ctx context.Context, p dockettype.Principal, asAdmin bool, tenant string) ([]store.DeadLetterGroup, error)
}

// failureRoutes are the bulk and dead-letter routes: the members' (their
// own tenant's) and, with the admin API, the admins'. A member follows a
// job at /v1/bulk/{id}: /v1/tasks/bulk/{id} would overlap
// /v1/tasks/{id}/events in the router.
func (s *server) failureRoutes() []route {
	if s.failures == nil {
		return nil
	}
	routes := []route{
		{http.MethodPost, "/v1/tasks/bulk", s.authenticated(s.startBulk(false))},
		{http.MethodGet, "/v1/bulk/{id}", s.authenticated(s.getBulk(false))},
		{http.MethodPost, "/v1/bulk/{id}/cancel", s.authenticated(s.cancelBulk(false))},
		{http.MethodGet, "/v1/tasks/dead-letters", s.authenticated(s.deadLetters(false))},
	}
	if s.adminStore != nil {
		routes = append(routes,
			route{http.MethodPost, "/v1/admin/bulk", s.admin(s.startBulk(true))},
			route{http.MethodGet, "/v1/admin/bulk/{id}", s.admin(s.getBulk(true))},
			route{http.MethodPost, "/v1/admin/bulk/{id}/cancel", s.admin(s.cancelBulk(true))},
			route{http.MethodGet, "/v1/admin/dead-letters", s.admin(s.deadLetters(true))},
		)
	}
	return routes
}

// input serves GET /v1/tasks/{id}/input: the input exactly as admitted.
// It writes the stored bytes as they are (no re-encoding).
func (s *server) input(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	in, err := s.exec.Input(r.Context(), p, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(in, '\n'))
}

// retry serves POST /v1/tasks/{id}/retry: the task, queued again.
func (s *server) retry(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	serveTask(w, r, func(id string) (any, error) { return s.exec.Retry(r.Context(), p, id) })
}

// bulkFields are the members of a bulk request, and of its filter.
var (
	bulkFields   = map[string]bool{"action": true, "filter": true}
	filterFields = map[string]bool{"tenant": true, "state": true, "workflow": true, "pool": true, "error_code": true,
		"created_before": true, "created_after": true}
)

func (s *server) startBulk(asAdmin bool) principalHandler {
	return func(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
		req, err := s.bulkRequest(w, r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		job, err := s.failures.StartBulk(r.Context(), p, asAdmin, req)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, r, http.StatusAccepted, job)
	}
}

// bulkRequest decodes a bulk body strictly: only the documented members,
// each once and of its type; the queue checks the values.
func (s *server) bulkRequest(w http.ResponseWriter, r *http.Request) (*queue.BulkRequest, error) {
	raw, _, err := s.objectBody(w, r, bulkFields, s.maxBody)
	if err != nil {
		return nil, err
	}
	req := &queue.BulkRequest{}
	if req.Action, err = decodeString("action", raw["action"]); err != nil {
		return nil, err
	}
	if v, ok := raw["filter"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		f, err := decodeObject(v, filterFields, "filter")
		if err != nil {
			return nil, err
		}
		str := func(name string, dst *string) error {
			if v, ok := f[name]; ok {
				var err error
				*dst, err = decodeString("filter."+name, v)
				return err
			}
			return nil
		}
		var state, pool, code string
		for name, dst := range map[string]*string{"tenant": &req.Filter.Tenant, "state": &state, "workflow": &req.Filter.Workflow,
			"pool": &pool, "error_code": &code} {
			if err := str(name, dst); err != nil {
				return nil, err
			}
		}
		req.Filter.State, req.Filter.Pool, req.Filter.ErrorCode = dockettype.State(state), dockettype.Pool(pool), dockettype.Code(code)
		for name, dst := range map[string]**time.Time{"created_before": &req.Filter.CreatedBefore, "created_after": &req.Filter.CreatedAfter} {
			var text string
			if err := str(name, &text); err != nil {
				return nil, err
			}
			if text == "" {
				continue
			}
			t, err := time.Parse(time.RFC3339Nano, text)
			if err != nil {
				return nil, invalidRequest("filter." + name + " must be an RFC 3339 time")
			}
			*dst = &t
		}
	}
	return req, nil
}

func (s *server) getBulk(asAdmin bool) principalHandler {
	return func(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
		serveTask(w, r, func(id string) (any, error) { return s.failures.GetBulk(r.Context(), p, asAdmin, id) })
	}
}

func (s *server) cancelBulk(asAdmin bool) principalHandler {
	return func(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
		serveTask(w, r, func(id string) (any, error) { return s.failures.CancelBulk(r.Context(), p, asAdmin, id) })
	}
}

// deadLettersBody is the answer of the dead-letter views.
type deadLettersBody struct {
	Groups []store.DeadLetterGroup `json:"groups"`
}

// deadLetters serves GET …/dead-letters: the failed tasks grouped by
// tenant, workflow and error code, largest groups first (the admins'
// view takes ?tenant=).
func (s *server) deadLetters(asAdmin bool) principalHandler {
	return func(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
		allowed := []string{}
		if asAdmin {
			allowed = append(allowed, "tenant")
		}
		q, err := queryParams(r, allowed...)
		if err != nil {
			writeError(w, r, err)
			return
		}
		groups, err := s.failures.DeadLetters(r.Context(), p, asAdmin, q["tenant"])
		if err != nil {
			writeError(w, r, err)
			return
		}
		if groups == nil {
			groups = []store.DeadLetterGroup{}
		}
		writeJSON(w, r, http.StatusOK, deadLettersBody{Groups: groups})
	}
}
