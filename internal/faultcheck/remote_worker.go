package faultcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/internal/leasetoken"
	"github.com/docket-dev/docket/worker"
)

// RemoteProbeWorkflow is the remote workflow of the remote scenario: the
// probe, run by Go SDK workers in processes of their own (`docket
// faultcheck-worker`), which log their executions as a server's probe
// does.
const RemoteProbeWorkflow = "faultcheck.remote_probe"

// RemoteWorkerReady starts the line a remote worker process prints on
// stdout once it runs.
const RemoteWorkerReady = "Docket worker running"

// RemoteWorkerOptions configure one remote worker process.
type RemoteWorkerOptions struct {
	URL     string // the server (or the proxy in front of it)
	Key     string // a worker key
	ExecDir string // where the execution log (exec-PID.log) goes
	Slots   int
	ID      string       // the worker ID the server lists
	Stdout  io.Writer    // receives RemoteWorkerReady
	Logger  *slog.Logger // the SDK's logs (codes and IDs)
}

// RunRemoteWorker runs a Go SDK worker of RemoteProbeWorkflow until ctx
// ends, then shuts it down gracefully. Each execution logs its start and
// end like the server's probe, under the epoch its lease token carries, so
// that the checker counts remote executions against claims the same way.
func RunRemoteWorker(ctx context.Context, o RemoteWorkerOptions) error {
	p, err := openProbe(o.ExecDir, clockwork.NewRealClock())
	if err != nil {
		return err
	}
	defer p.f.Close()
	w := worker.New(o.URL, o.Key, worker.Options{Slots: o.Slots, WorkerID: o.ID, Logger: o.Logger})
	w.Handle(RemoteProbeWorkflow, func(ctx context.Context, t *worker.Task) (any, error) {
		c, ok := leasetoken.Peek(t.LeaseToken())
		if !ok || c.TaskID != t.ID {
			return nil, errors.New("the lease token does not name the task")
		}
		out, fail, err := p.execute(ctx, ExecRecord{Tenant: t.Tenant, Task: t.ID, Epoch: c.Epoch, Attempt: t.Attempt}, t.Input)
		switch {
		case fail != nil:
			return nil, worker.Fail(string(fail.code), fail.message, fail.retryable)
		case err != nil:
			return nil, err
		}
		return json.RawMessage(out), nil
	})
	fmt.Fprintln(o.Stdout, RemoteWorkerReady)
	return w.Run(ctx)
}
