package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/auth"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store"
)

// ScheduleAdmin manages periodic schedules. *queue.Service satisfies it;
// its errors are *dockettype.Error values.
type ScheduleAdmin interface {
	PutSchedule(ctx context.Context, req *queue.ScheduleRequest) (*queue.Schedule, bool, error)
	GetSchedule(ctx context.Context, name string) (*queue.Schedule, error)
	ListSchedules(ctx context.Context) ([]*queue.Schedule, error)
	DeleteSchedule(ctx context.Context, name string) error
	PauseSchedule(ctx context.Context, name string) (*queue.Schedule, error)
	ResumeSchedule(ctx context.Context, name string) (*queue.Schedule, error)
}

// scheduleRoutes are the admin routes of periodic schedules.
func (s *server) scheduleRoutes() []route {
	if s.schedules == nil {
		return nil
	}
	return []route{
		{http.MethodGet, "/v1/admin/schedules", s.admin(s.listSchedules)},
		{http.MethodPut, "/v1/admin/schedules/{name}", s.admin(s.putSchedule)},
		{http.MethodGet, "/v1/admin/schedules/{name}", s.admin(s.getSchedule)},
		{http.MethodDelete, "/v1/admin/schedules/{name}", s.admin(s.deleteSchedule)},
		{http.MethodPost, "/v1/admin/schedules/{name}/pause", s.admin(s.pauseSchedule)},
		{http.MethodPost, "/v1/admin/schedules/{name}/resume", s.admin(s.resumeSchedule)},
	}
}

// scheduleBody is a schedule as the admin API shows it.
type scheduleBody struct {
	Name          string          `json:"name"`
	Tenant        string          `json:"tenant"`
	Workflow      string          `json:"workflow"`
	Input         json.RawMessage `json:"input"`
	Cron          string          `json:"cron"`
	TimeZone      string          `json:"time_zone"`
	Pool          *string         `json:"pool"` // null: the workflow's default
	TimeoutMS     int64           `json:"timeout_ms"`
	MaxAttempts   int             `json:"max_attempts"`
	Overlap       string          `json:"overlap"`
	Missed        string          `json:"missed"`
	CatchUpLimit  int             `json:"catch_up_limit"`
	Paused        bool            `json:"paused"`
	NextFireTimes []time.Time     `json:"next_fire_times"`
	LastTaskID    *string         `json:"last_task_id"`
	LastFireAt    *time.Time      `json:"last_fire_at"`
	Fired         int64           `json:"fired"`
	MissedFires   int64           `json:"missed_fires"`
	Skipped       int64           `json:"skipped"`
	LastError     *string         `json:"last_error"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	Runs          *[]runBody      `json:"runs,omitempty"` // GET of one schedule only
}

// runBody is one task a schedule made; state is null once the task was
// deleted (retention).
type runBody struct {
	FireAt time.Time `json:"fire_at"`
	TaskID string    `json:"task_id"`
	State  *string   `json:"state"`
}

type schedulesBody struct {
	Schedules []scheduleBody `json:"schedules"`
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func scheduleOf(sc *queue.Schedule, withRuns bool) scheduleBody {
	b := scheduleBody{
		Name: sc.Name, Tenant: sc.Tenant, Workflow: sc.Workflow, Input: sc.Input, Cron: sc.Cron, TimeZone: sc.TimeZone,
		Pool: nonEmpty(string(sc.Pool)), TimeoutMS: sc.TimeoutMS, MaxAttempts: sc.MaxAttempts, Overlap: sc.Overlap,
		Missed: sc.Missed, CatchUpLimit: sc.CatchUpLimit, Paused: sc.Paused, NextFireTimes: sc.NextFireTimes,
		LastTaskID: nonEmpty(sc.LastTaskID), LastFireAt: sc.LastFireAt, Fired: sc.Fired, MissedFires: sc.MissedFires,
		Skipped: sc.Skipped, LastError: nonEmpty(string(sc.LastError)), CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt,
	}
	if b.NextFireTimes == nil {
		b.NextFireTimes = []time.Time{}
	}
	if withRuns {
		runs := make([]runBody, len(sc.Runs))
		for i, r := range sc.Runs {
			runs[i] = runBody{FireAt: r.FireAt, TaskID: r.TaskID, State: nonEmpty(string(r.State))}
		}
		b.Runs = &runs
	}
	return b
}

// scheduleFields are the members of a PUT /v1/admin/schedules/{name} body.
var scheduleFields = map[string]bool{
	"tenant": true, "workflow": true, "input": true, "cron": true, "time_zone": true, "pool": true,
	"timeout_ms": true, "max_attempts": true, "overlap": true, "missed": true, "catch_up_limit": true, "paused": true,
}

// putSchedule serves PUT /v1/admin/schedules/{name}: creates (201) or
// replaces (200) a schedule. The tenant is created with the default limit
// when missing, as for a key.
func (s *server) putSchedule(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	req, err := s.scheduleRequest(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ctx := r.Context()
	if _, err := s.adminStore.EnsureTenant(ctx, &store.EnsureTenantParams{Now: s.clock.Now(), ID: req.Tenant, DefaultMaxInFlight: s.tenantLimit}); err != nil {
		writeError(w, r, s.adminStoreError(ctx, "admin_schedules", err))
		return
	}
	sc, created, err := s.schedules.PutSchedule(ctx, req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, r, status, scheduleOf(sc, false))
}

// scheduleRequest decodes a PUT body strictly: only the documented
// members, each once and of its type; the queue checks the values.
func (s *server) scheduleRequest(w http.ResponseWriter, r *http.Request) (*queue.ScheduleRequest, error) {
	raw, _, err := s.objectBody(w, r, scheduleFields, s.maxBody)
	if err != nil {
		return nil, err
	}
	req := &queue.ScheduleRequest{Name: r.PathValue("name"), Input: raw["input"]}
	var pool string
	strs := []struct {
		name string
		dst  *string
	}{
		{"tenant", &req.Tenant}, {"workflow", &req.Workflow}, {"cron", &req.Cron}, {"time_zone", &req.TimeZone},
		{"pool", &pool}, {"overlap", &req.Overlap}, {"missed", &req.Missed},
	}
	for _, f := range strs {
		if v, ok := raw[f.name]; ok {
			if *f.dst, err = decodeString(f.name, v); err != nil {
				return nil, err
			}
		}
	}
	req.Pool = dockettype.Pool(pool)
	for _, f := range []struct {
		name string
		dst  *int
	}{{"max_attempts", &req.MaxAttempts}, {"catch_up_limit", &req.CatchUpLimit}} {
		if v, ok := raw[f.name]; ok {
			n, err := decodeInt(f.name, v)
			if err != nil {
				return nil, err
			}
			*f.dst = *n
		}
	}
	if v, ok := raw["timeout_ms"]; ok {
		if json.Unmarshal(v, &req.TimeoutMS) != nil {
			return nil, invalidRequest("timeout_ms must be an integer")
		}
	}
	if v, ok := raw["paused"]; ok {
		if json.Unmarshal(v, &req.Paused) != nil || string(v) == "null" {
			return nil, invalidRequest(`"paused" must be true or false`)
		}
	}
	switch {
	case !queue.ValidScheduleName(req.Name):
		return nil, invalidRequest(fmt.Sprintf("a schedule name is 1 to %d characters of [a-z0-9._-]", queue.MaxScheduleNameLen))
	case !auth.ValidName(req.Tenant):
		return nil, invalidRequest(`"tenant" is required: 1-64 characters of [A-Za-z0-9._@-]`)
	case req.Cron == "":
		return nil, invalidRequest(`"cron" is required`)
	case req.Workflow == "":
		return nil, invalidRequest(`"workflow" is required`)
	case req.Overlap == "":
		return nil, invalidRequest(`"overlap" is required: "allow" or "skip"`)
	case req.Missed == "":
		return nil, invalidRequest(`"missed" is required: "skip" or "catch_up"`)
	}
	return req, nil
}

// getSchedule serves GET /v1/admin/schedules/{name}: the schedule with its
// next fire times and its latest runs.
func (s *server) getSchedule(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	sc, err := s.schedules.GetSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, scheduleOf(sc, true))
}

// listSchedules serves GET /v1/admin/schedules: every schedule, by name.
func (s *server) listSchedules(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.schedules.ListSchedules(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := schedulesBody{Schedules: make([]scheduleBody, len(list))}
	for i, sc := range list {
		out.Schedules[i] = scheduleOf(sc, false)
	}
	writeJSON(w, r, http.StatusOK, out)
}

// deleteSchedule serves DELETE /v1/admin/schedules/{name}; the tasks it
// made stay.
func (s *server) deleteSchedule(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	name := r.PathValue("name")
	if err := s.schedules.DeleteSchedule(r.Context(), name); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]string{"name": name})
}

func (s *server) pauseSchedule(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	s.setSchedulePaused(w, r, s.schedules.PauseSchedule)
}

func (s *server) resumeSchedule(w http.ResponseWriter, r *http.Request, _ dockettype.Principal) {
	s.setSchedulePaused(w, r, s.schedules.ResumeSchedule)
}

// setSchedulePaused serves POST …/{name}/pause and …/resume (no body).
func (s *server) setSchedulePaused(w http.ResponseWriter, r *http.Request, set func(context.Context, string) (*queue.Schedule, error)) {
	if _, err := queryParams(r); err != nil {
		writeError(w, r, err)
		return
	}
	sc, err := set(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, scheduleOf(sc, false))
}
