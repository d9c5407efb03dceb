package inprocess_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/inprocess"
	"github.com/docket-dev/docket/internal/logtest"
	"github.com/docket-dev/docket/internal/queue"
	"github.com/docket-dev/docket/internal/store/engine"
	"github.com/docket-dev/docket/internal/store/sqlite"
	"github.com/docket-dev/docket/workflow"
)

type fixedVersion string

func (v fixedVersion) CurrentVersion(context.Context) (string, error) { return string(v), nil }

func newService(t *testing.T, reg *workflow.Registry) (*queue.Service, *engine.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "d.db"), sqlite.Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logger, _ := logtest.New(t)
	svc, err := queue.New(st, inprocess.New(reg, fixedVersion("cfg-7")), queue.Config{Logger: logger, ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return svc, st
}

var alice = dockettype.Principal{Tenant: "acme", Name: "alice", Role: dockettype.RoleMember}

// TestBindingIsBuiltByTheServer: the binding a workflow receives carries the
// claimed task's facts; request input that names binding fields changes
// nothing.
func TestBindingIsBuiltByTheServer(t *testing.T) {
	reg := workflow.NewRegistry()
	got := make(chan *workflow.Binding, 1)
	err := reg.Register("test.capture", workflow.Definition{Pool: dockettype.PoolOnline,
		Run: func(ctx context.Context, b *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
			got <- b
			return nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := newService(t, reg)
	res, err := svc.Submit(context.Background(), alice, &queue.SubmitRequest{
		IdempotencyKey: "k", Workflow: "test.capture", TimeoutMS: 60000,
		Input: json.RawMessage(`{"author":"mallory","tenant":"globex","task_id":"forged","lease_epoch":99,"config_version":"evil","` + logtest.Canary + `":1}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task
	var b *workflow.Binding
	select {
	case b = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("workflow not invoked")
	}
	want := map[string]any{
		"TaskID": task.ID, "Tenant": "acme", "Author": "alice", "Workflow": "test.capture",
		"Pool": dockettype.PoolOnline, "Attempt": 1, "LeaseEpoch": int64(1), "ConfigVersion": "cfg-7", "TraceID": task.TraceID,
	}
	gotVals := map[string]any{
		"TaskID": b.TaskID(), "Tenant": b.Tenant(), "Author": b.Author(), "Workflow": b.Workflow(),
		"Pool": b.Pool(), "Attempt": b.Attempt(), "LeaseEpoch": b.LeaseEpoch(), "ConfigVersion": b.ConfigVersion(), "TraceID": b.TraceID(),
	}
	if !reflect.DeepEqual(gotVals, want) {
		t.Fatalf("binding = %v, want %v", gotVals, want)
	}
	if !b.Deadline().Equal(task.DeadlineAt) {
		t.Fatalf("binding deadline %s, want the task's %s", b.Deadline(), task.DeadlineAt)
	}
}

// TestBindingCannotBeBuiltOutsideDocket: the public type has no exported
// fields, and a zero value has no evidence sink.
func TestBindingCannotBeBuiltOutsideDocket(t *testing.T) {
	typ := reflect.TypeOf(workflow.Binding{})
	for i := 0; i < typ.NumField(); i++ {
		if typ.Field(i).IsExported() {
			t.Errorf("workflow.Binding has exported field %s", typ.Field(i).Name)
		}
	}
	var zero workflow.Binding
	err := zero.RecordEvidence(context.Background(), dockettype.EvidenceItem{Kind: "x", Body: json.RawMessage(`{}`)})
	if !errors.Is(err, dockettype.ErrNoEvidenceSink) {
		t.Fatalf("zero binding RecordEvidence = %v, want ErrNoEvidenceSink", err)
	}
}

// TestUnknownWorkflowCreatesNothing: only registered entry points can be
// named; anything else is refused before anything is written.
func TestUnknownWorkflowCreatesNothing(t *testing.T) {
	svc, st := newService(t, workflow.NewRegistry())
	_, err := svc.Submit(context.Background(), alice, &queue.SubmitRequest{IdempotencyKey: "k", Workflow: "os.exec"})
	var de *dockettype.Error
	if !errors.As(err, &de) || de.Code != dockettype.CodeUnknownWorkflow {
		t.Fatalf("unknown workflow: %v, want unknown_workflow", err)
	}
	if st, err := st.Stats(context.Background()); err != nil || len(st.Tenants) != 0 {
		t.Fatalf("tenants after refusal: %+v %v, want none created", st, err)
	}
	page, err := svc.List(context.Background(), alice, &queue.ListRequest{})
	if err != nil || len(page.Tasks) != 0 {
		t.Fatalf("tasks after refusal: %v %v", page, err)
	}
}

// TestRegistryRefusesBadDefinitions covers the registration API's checks.
func TestRegistryRefusesBadDefinitions(t *testing.T) {
	noop := func(context.Context, *workflow.Binding, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	reg := workflow.NewRegistry()
	cases := []struct {
		name string
		def  workflow.Definition
	}{
		{"Bad Name", workflow.Definition{Pool: dockettype.PoolOnline, Run: noop}},
		{"ok.pool", workflow.Definition{Pool: "gpu", Run: noop}},
		{"ok.nil", workflow.Definition{Pool: dockettype.PoolOnline}},
	}
	for _, c := range cases {
		if err := reg.Register(c.name, c.def); err == nil {
			t.Errorf("Register(%q, %+v) accepted", c.name, c.def)
		}
	}
	if err := reg.Register("ok.once", workflow.Definition{Pool: dockettype.PoolOnline, Run: noop}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("ok.once", workflow.Definition{Pool: dockettype.PoolOnline, Run: noop}); err == nil {
		t.Fatal("a name registered twice")
	}
}
