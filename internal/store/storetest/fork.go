package storetest

import (
	"testing"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

func (su suite) testFork(t *testing.T) {
	su.run(t, "SharesDatabase", func(t *testing.T, s store.Store) {
		f := fork(t, s, "scheduler", 2)
		if err := f.Ping(t.Context()); err != nil {
			t.Fatalf("fork Ping: %v", err)
		}
		a := admitOne(t, f, at(0), newItem(tenantA))
		if got := getTask(t, s, tenantA, a.ID); got.ID != a.ID {
			t.Errorf("parent read %s, want the fork's task %s", got.ID, a.ID)
		}
		b := admitOne(t, s, at(time.Second), newItem(tenantA))
		if got := getTask(t, f, tenantA, b.ID); got.ID != b.ID {
			t.Errorf("fork read %s, want the parent's task %s", got.ID, b.ID)
		}
	})

	su.run(t, "CloseLeavesParentUsable", func(t *testing.T, s store.Store) {
		f, err := s.Fork("short-lived", store.ForkOptions{MaxConns: 1})
		if err != nil {
			t.Fatalf("Fork: %v", err)
		}
		admitOne(t, f, at(0), newItem(tenantA))
		if err := f.Close(); err != nil {
			t.Fatalf("Close fork: %v", err)
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("parent Ping after closing a fork: %v", err)
		}
		task := admitOne(t, s, at(time.Second), newItem(tenantA))
		getTask(t, s, tenantA, task.ID)
		wantUsage(t, s, dockettype.PoolOnline, 2, tenantA, 2)
	})
}
