package faultcheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/workflow"
)

// ProbeWorkflow is the workflow the checker's load runs. A server registers
// it only when started with the hidden flag --faultcheck-probe DIR.
const ProbeWorkflow = "faultcheck.probe"

// Codes the probe fails with.
const (
	codeProbeRetry dockettype.Code = "probe_retry" // retryable, while attempt <= fail_until
	codeProbeFail  dockettype.Code = "probe_fail"  // permanent
)

// probeInput is the input of one probe task.
type probeInput struct {
	Key       string `json:"key"`                  // the idempotency key, so a task says which key made it
	MS        int64  `json:"ms"`                   // how long each attempt runs
	FailUntil int    `json:"fail_until,omitempty"` // fail retryably while attempt <= FailUntil
	Fail      bool   `json:"fail,omitempty"`       // fail permanently
	// Canary is LogCanary: no server log line may carry it.
	Canary string `json:"canary,omitempty"`
}

// LogCanary is in every probe task's input and result; a server log line
// that carries it leaks a payload.
const LogCanary = "FAULTCHECK-CANARY-5d1e"

// probeResult is what a probe task that succeeded returns: which execution
// produced it.
type probeResult struct {
	Task    string `json:"task"`
	Key     string `json:"key"`
	Canary  string `json:"canary,omitempty"`
	Epoch   int64  `json:"epoch"`
	Attempt int    `json:"attempt"`
	PID     int    `json:"pid"`
}

// Execution records, one JSON line each, appended to the node's execution
// log.
const (
	execStart = "start"
	execEnd   = "end"
	// execTerm is not the probe's: the checker appends it to a process's
	// log just before it sends the process SIGTERM, so that the records
	// after it are those written during the shutdown (markTerm).
	execTerm = "term"
)

// ExecRecord is one line of an execution log: the probe writes a start line
// before it does anything else, and an end line when it returns.
type ExecRecord struct {
	Event   string `json:"ev"` // start, end, or term (the checker's mark)
	Tenant  string `json:"tenant"`
	Task    string `json:"task"`
	Epoch   int64  `json:"epoch"`
	Attempt int    `json:"attempt"`
	PID     int    `json:"pid"`
	Outcome string `json:"outcome,omitempty"` // end: ok, retry, fail, stopped
}

// RegisterProbe registers ProbeWorkflow in reg. Each execution appends its
// records to dir/exec-PID.log with one write(2) per line and no buffering
// in the process, so that a line written survives a kill -9 of the server
// (the kernel holds it); the log is what "executions" are counted from. The
// returned Closer closes the log.
func RegisterProbe(reg *workflow.Registry, dir string, clock clockwork.Clock) (io.Closer, error) {
	p, err := openProbe(dir, clock)
	if err != nil {
		return nil, err
	}
	if err := reg.Register(ProbeWorkflow, workflow.Definition{Pool: dockettype.PoolOnline, Run: p.run}); err != nil {
		p.f.Close()
		return nil, err
	}
	return p.f, nil
}

// openProbe opens this process's execution log in dir.
func openProbe(dir string, clock clockwork.Clock) (*probe, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("faultcheck probe: %w", err)
	}
	pid := os.Getpid()
	f, err := os.OpenFile(execLogName(dir, pid), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("faultcheck probe: %w", err)
	}
	return &probe{f: f, pid: pid, clock: clock}, nil
}

type probe struct {
	mu    sync.Mutex
	f     *os.File
	pid   int
	clock clockwork.Clock
}

func (p *probe) record(r ExecRecord) error {
	r.PID = p.pid
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err = p.f.Write(append(line, '\n'))
	return err
}

func (p *probe) run(ctx context.Context, b *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
	out, fail, err := p.execute(ctx, ExecRecord{Tenant: b.Tenant(), Task: b.TaskID(), Epoch: b.LeaseEpoch(), Attempt: b.Attempt()}, input)
	if fail != nil {
		return nil, workflow.Fail(fail.code, fail.message, fail.retryable)
	}
	return out, err
}

// probeFailure is how an execution chose to fail.
type probeFailure struct {
	code      dockettype.Code
	message   string
	retryable bool
}

// execute is one execution of the probe, wherever it runs (a server's
// pool, or a remote worker): it logs its start, does what the input asks
// and logs its end. rec names the task, its lease epoch and attempt.
func (p *probe) execute(ctx context.Context, rec ExecRecord, input json.RawMessage) (json.RawMessage, *probeFailure, error) {
	start := rec
	start.Event = execStart
	if err := p.record(start); err != nil {
		// Not counted, so not run: an execution the log cannot see would
		// make the executions ≤ attempts check blind.
		return nil, nil, err
	}
	end := func(outcome string) {
		rec.Event, rec.Outcome = execEnd, outcome
		_ = p.record(rec) // the start line is what counts; the end line is informative
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	var in probeInput
	if err := dec.Decode(&in); err != nil || in.MS < 0 || in.MS > int64(time.Hour/time.Millisecond) {
		end("fail")
		return nil, &probeFailure{dockettype.CodeInvalidInput, "the probe's input is not its own", false}, nil
	}
	if in.MS > 0 {
		select {
		case <-p.clock.After(time.Duration(in.MS) * time.Millisecond):
		case <-ctx.Done():
			end("stopped")
			return nil, nil, ctx.Err()
		}
	}
	switch {
	case in.Fail:
		end("fail")
		return nil, &probeFailure{codeProbeFail, "the probe fails for good, as its input asked", false}, nil
	case rec.Attempt <= in.FailUntil:
		end("retry")
		return nil, &probeFailure{codeProbeRetry, "the probe fails this attempt, as its input asked", true}, nil
	}
	out, err := json.Marshal(probeResult{Task: rec.Task, Key: in.Key, Canary: in.Canary, Epoch: rec.Epoch, Attempt: rec.Attempt, PID: p.pid})
	if err != nil {
		return nil, nil, err
	}
	end("ok")
	return out, nil, nil
}

// execLogName is the execution log of process pid in dir.
func execLogName(dir string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("exec-%d.log", pid))
}

// markTerm appends a term record to the execution log of process pid in
// dir, with one write(2) on a file opened O_APPEND like the probe's own: the
// record falls between the lines the process wrote before it and after it.
func markTerm(dir string, pid int) error {
	f, err := os.OpenFile(execLogName(dir, pid), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	line, err := json.Marshal(ExecRecord{Event: execTerm, PID: pid})
	if err == nil {
		_, err = f.Write(append(line, '\n'))
	}
	return errors.Join(err, f.Close())
}

// ReadExecLogs reads the records of the tenants' tasks, and the checker's
// term marks, in every exec-*.log of dir, each file in its order. A torn last line (a write cut by a crash of the whole machine,
// not of the process) is skipped.
func ReadExecLogs(dir string, tenants []string) ([]ExecRecord, error) {
	files, err := filepath.Glob(filepath.Join(dir, "exec-*.log"))
	if err != nil {
		return nil, err
	}
	var out []ExecRecord
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			var r ExecRecord
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.Event != execTerm && !slices.Contains(tenants, r.Tenant) {
				continue
			}
			out = append(out, r)
		}
		err = sc.Err()
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	return out, nil
}
