package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/queue"
)

// maxIDLen bounds task IDs and list cursors; longer ones cannot exist.
const maxIDLen = 128

// Largest page a list may ask for (the queue enforces the same bound).
const maxListLimit = 500

// listBody is the answer of GET /v1/tasks.
type listBody struct {
	Tasks []*dockettype.Task `json:"tasks"`
	Next  string             `json:"next,omitempty"`
}

type eventsBody struct {
	Events []dockettype.Event `json:"events"`
}

type evidenceBody struct {
	Evidence []dockettype.Evidence `json:"evidence"`
}

// submit serves POST /v1/tasks: 201 with a new task, 200 with the task of
// an earlier identical submission.
func (s *server) submit(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	keys := r.Header.Values("Idempotency-Key")
	if len(keys) != 1 || queue.ValidIdempotencyKey(keys[0]) != nil {
		writeError(w, r, invalidRequest("the Idempotency-Key header is required once, with 1 to 255 visible ASCII characters"))
		return
	}
	if err := checkJSONContentType(r); err != nil {
		writeError(w, r, err)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	req, err := decodeSubmission(body, s.maxTimeout)
	if err != nil {
		writeError(w, r, err)
		return
	}
	req.IdempotencyKey = keys[0]
	req.TraceID = infoFrom(r.Context()).traceID
	res, err := s.exec.Submit(r.Context(), p, req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	w.Header().Set("Location", "/v1/tasks/"+url.PathEscape(res.Task.ID))
	writeJSON(w, r, status, res.Task)
}

// get serves GET /v1/tasks/{id}, with an optional long poll (?wait=).
func (s *server) get(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	q, err := queryParams(r, "wait")
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	var wait time.Duration
	if v, ok := q["wait"]; ok {
		wait, err = time.ParseDuration(v)
		if err != nil || wait < 0 || wait > MaxWait {
			writeError(w, r, invalidRequest(fmt.Sprintf("wait must be a duration between 0s and %s, like 10s", MaxWait)))
			return
		}
	}
	var t *dockettype.Task
	if wait > 0 {
		if !s.waits.acquire(p.Tenant) {
			writeError(w, r, &dockettype.Error{Code: dockettype.CodeTooManyRequests, RetryAfter: waitRetryAfter,
				Message: "too many long polls are held at once; retry later, or read the task without ?wait="})
			return
		}
		defer s.waits.release(p.Tenant)
		// The request's context ends the poll when the client goes away.
		t, err = s.exec.Wait(r.Context(), p, id, wait)
	} else {
		t, err = s.exec.Get(r.Context(), p, id)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, t)
}

// list serves GET /v1/tasks: the tenant's tasks, newest first, one page.
func (s *server) list(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	q, err := queryParams(r, "state", "pool", "workflow", "limit", "after")
	if err != nil {
		writeError(w, r, err)
		return
	}
	req := &queue.ListRequest{
		State:    dockettype.State(q["state"]),
		Pool:     dockettype.Pool(q["pool"]),
		Workflow: q["workflow"],
		After:    q["after"],
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			writeError(w, r, invalidRequest(fmt.Sprintf("limit must be an integer between 1 and %d", maxListLimit)))
			return
		}
		req.Limit = n
	}
	if req.After != "" && !validCursor(req.After) {
		// A cursor is a task ID; anything else would list from the start
		// (a client paging forever) or reach the database as garbage.
		writeError(w, r, invalidRequest("after must be the next cursor of a previous page"))
		return
	}
	res, err := s.exec.List(r.Context(), p, req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := listBody{Tasks: res.Tasks, Next: res.Next}
	if out.Tasks == nil {
		out.Tasks = []*dockettype.Task{}
	}
	writeJSON(w, r, http.StatusOK, out)
}

// cancel serves POST /v1/tasks/{id}/cancel: the task, now cancelled or in
// its earlier terminal state.
func (s *server) cancel(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	serveTask(w, r, func(id string) (any, error) { return s.exec.Cancel(r.Context(), p, id) })
}

// events serves GET /v1/tasks/{id}/events: the task's history.
func (s *server) events(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	serveTask(w, r, func(id string) (any, error) {
		ev, err := s.exec.Events(r.Context(), p, id)
		if ev == nil {
			ev = []dockettype.Event{}
		}
		return eventsBody{Events: ev}, err
	})
}

// evidence serves GET /v1/tasks/{id}/evidence.
func (s *server) evidence(w http.ResponseWriter, r *http.Request, p dockettype.Principal) {
	serveTask(w, r, func(id string) (any, error) {
		ev, err := s.exec.Evidence(r.Context(), p, id)
		if ev == nil {
			ev = []dockettype.Evidence{}
		}
		return evidenceBody{Evidence: ev}, err
	})
}

// serveTask answers a call on one task that takes no query parameters:
// it checks the query and the {id}, runs call and writes its answer (200)
// or its error.
func serveTask(w http.ResponseWriter, r *http.Request, call func(id string) (any, error)) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	body, err := call(id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, body)
}

// validCursor reports whether c is a task ID as the server makes them: a
// UUID in its canonical lowercase form.
func validCursor(c string) bool {
	if len(c) != 36 {
		return false
	}
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; i {
		case 8, 13, 18, 23:
			if ch != '-' {
				return false
			}
		default:
			if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
				return false
			}
		}
	}
	return true
}

// taskID returns the {id} path value. An ID that cannot exist is answered
// 404 at once, without asking the store.
func taskID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	ok := plausibleID(id)
	if !ok {
		writeError(w, r, dockettype.NewError(dockettype.CodeNotFound, "task not found"))
	}
	return id, ok
}

// plausibleID reports whether id could name a task or a key: 1 to
// maxIDLen visible ASCII characters.
func plausibleID(id string) bool {
	ok := id != "" && len(id) <= maxIDLen
	for i := 0; ok && i < len(id); i++ {
		ok = id[i] > 0x20 && id[i] < 0x7f
	}
	return ok
}

// queryParams parses the query string strictly: only the allowed
// parameters, each at most once. Parameters are never logged.
func queryParams(r *http.Request, allowed ...string) (map[string]string, error) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalidRequest("the query string is malformed")
	}
	out := make(map[string]string, len(values))
	for name, vs := range values {
		known := false
		for _, a := range allowed {
			known = known || a == name
		}
		if !known {
			return nil, invalidRequest(unknownParamMessage(name, allowed))
		}
		if len(vs) != 1 {
			return nil, invalidRequest(fmt.Sprintf("query parameter %q must appear once", name))
		}
		out[name] = vs[0]
	}
	return out, nil
}

func unknownParamMessage(name string, allowed []string) string {
	if len(allowed) == 0 {
		return "this route takes no query parameters"
	}
	msg := "unknown query parameter"
	if q, ok := quoteName(name); ok {
		msg += " " + q
	}
	return fmt.Sprintf("%s; this route accepts %s", msg, strings.Join(allowed, ", "))
}
