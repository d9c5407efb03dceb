//go:build unix

package faultcheck

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/internal/dsn"
	"github.com/docket-dev/docket/internal/store"
)

// ScenarioSchedules fires periodic schedules while nodes are killed.
const ScenarioSchedules = "schedules"

// schedules runs two schedules that fire every second, as a tenant of
// their own, beside the usual load: one with missed "catch_up" (limit
// 100: every fire time must make its task, however the kills fall) and
// one with missed "skip" (every fire time a node and the database were up
// for must make its task). It kills a random node with SIGKILL every 1–4 s
// and starts it again 0–1 s later; on PostgreSQL it runs three nodes, and
// where the cluster can be stopped (as for pg-restart) every fourth fault
// stops PostgreSQL for 1–3 s instead. After the drain it pauses the
// schedules and reads their tasks: exactly one per fire time
// (checkSchedules).
type schedules struct {
	pgStops
	tenant string
	admins []*client.Client     // one per node
	first  map[string]time.Time // schedule → its first fire time
}

func newSchedules() Scenario { return &schedules{first: map[string]time.Time{}} }

func (*schedules) Name() string { return ScenarioSchedules }

func (*schedules) Needs(string) string { return "" }

// scheduleNames are the run's schedules and whether each catches up.
var scheduleNames = []struct {
	name    string
	catchUp bool
}{{"fc-catch-up", true}, {"fc-skip", false}}

func (s *schedules) Setup(ctx context.Context, r *rig) error {
	nodes := 1
	if dsn.IsPostgres(r.opts.DB) {
		nodes = 3
		s.findPG(r)
	}
	for range nodes {
		if err := r.addNode(nodeConfig{}); err != nil {
			return err
		}
	}
	var err error
	s.tenant, s.admins, err = r.ownTenant(ctx, "fc-schedules-", "admin")
	return err
}

// scheduleJSON is the part of a schedule the scenario reads.
type scheduleJSON struct {
	NextFireTimes []time.Time `json:"next_fire_times"`
	Paused        bool        `json:"paused"`
}

// call makes an admin call, through the next node when a node does not
// answer (it may be down or restarting), for up to a minute.
func (s *schedules) call(ctx context.Context, r *rig, method, path string, body any, out any) error {
	give := r.opts.Clock.Now().Add(time.Minute)
	for try := 1; ; try++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.admins[try%len(s.admins)].Call(cctx, method, path, body, out)
		cancel()
		if err == nil || ctx.Err() != nil || r.opts.Clock.Now().After(give) {
			return err
		}
		var ae *client.Error
		if errors.As(err, &ae) && ae.StatusCode < 500 {
			return err // refused: trying again will not help
		}
		if err := sleep(ctx, r.opts.Clock, min(time.Duration(try)*200*time.Millisecond, 2*time.Second)); err != nil {
			return err
		}
	}
}

func (s *schedules) Inject(ctx context.Context, r *rig, rng *mrand.Rand) error {
	for _, sc := range scheduleNames {
		body := map[string]any{"tenant": s.tenant, "workflow": "demo.echo", "input": map[string]string{"schedule": sc.name},
			"cron": "* * * * * *", "pool": "offline", "overlap": "allow", "missed": "skip"}
		if sc.catchUp {
			body["missed"], body["catch_up_limit"] = "catch_up", 100
		}
		var out scheduleJSON
		if err := s.call(context.Background(), r, "PUT", "/v1/admin/schedules/"+sc.name, body, &out); err != nil {
			return fmt.Errorf("create schedule %s: %w", sc.name, err)
		}
		if len(out.NextFireTimes) == 0 {
			return fmt.Errorf("schedule %s has no next fire time", sc.name)
		}
		s.first[sc.name] = out.NextFireTimes[0]
	}
	return r.killsAndStops(ctx, rng, s.pg)
}

// collectSchedules pauses the schedules, once every node is up and the
// catch-up schedule has caught up, and reads what each made.
func (s *schedules) collectSchedules(ctx context.Context, r *rig, st store.Store) ([]ScheduleView, error) {
	if len(s.first) < len(scheduleNames) {
		return nil, errors.New("the schedules were not created")
	}
	// Caught up: the next fire time is at most a second behind.
	give := r.opts.Clock.Now().Add(2 * time.Minute)
	for {
		var out scheduleJSON
		if err := s.call(ctx, r, "GET", "/v1/admin/schedules/fc-catch-up", nil, &out); err != nil {
			return nil, err
		}
		if len(out.NextFireTimes) > 0 && r.opts.Clock.Since(out.NextFireTimes[0]) < time.Second {
			break
		}
		if r.opts.Clock.Now().After(give) {
			r.note("the catch-up schedule had not caught up 2 minutes after the drain")
			break
		}
		if err := sleep(ctx, r.opts.Clock, 250*time.Millisecond); err != nil {
			return nil, err
		}
	}
	paused := map[string]time.Time{}
	for _, sc := range scheduleNames {
		if err := s.call(ctx, r, "POST", "/v1/admin/schedules/"+sc.name+"/pause", nil, nil); err != nil {
			return nil, fmt.Errorf("pause schedule %s: %w", sc.name, err)
		}
		paused[sc.name] = r.opts.Clock.Now()
	}
	// Fires in flight at the pause land within a tick or two.
	if err := sleep(ctx, r.opts.Clock, 2*time.Second); err != nil {
		return nil, err
	}
	fires := map[string]map[time.Time][]string{}
	tasks, err := tenantTasks(ctx, st, s.tenant)
	if err != nil {
		return nil, fmt.Errorf("list the schedules' tasks: %w", err)
	}
	for _, t := range tasks {
		name := strings.TrimPrefix(t.Author, "schedule:")
		if fires[name] == nil {
			fires[name] = map[time.Time][]string{}
		}
		var at time.Time
		if t.RunAt != nil {
			at = t.RunAt.UTC()
		}
		fires[name][at] = append(fires[name][at], t.ID)
	}
	var nodes []string
	for _, n := range r.nodes {
		nodes = append(nodes, n.Name)
	}
	var views []ScheduleView
	for _, sc := range scheduleNames {
		views = append(views, ScheduleView{Name: sc.name, CatchUp: sc.catchUp, First: s.first[sc.name], Until: paused[sc.name],
			Fires: fires[sc.name], Nodes: nodes})
	}
	return views, nil
}
