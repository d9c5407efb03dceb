// Package demo registers the demo-mode workflows: demo.echo returns its
// input, demo.sleep waits ({"ms": N}) and honours cancellation, demo.fail
// fails with a chosen code ({"code": "…", "retryable": bool}). All three run
// on the online pool unless a submission names another.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/workflow"
)

// MaxSleep bounds demo.sleep.
const MaxSleep = time.Hour

// Register adds the demo workflows to reg. clock drives demo.sleep.
func Register(reg *workflow.Registry, clock clockwork.Clock) error {
	defs := map[string]workflow.Func{
		"demo.echo":  echo,
		"demo.sleep": sleeper(clock),
		"demo.fail":  fail,
	}
	for _, name := range []string{"demo.echo", "demo.sleep", "demo.fail"} {
		if err := reg.Register(name, workflow.Definition{Pool: dockettype.PoolOnline, Run: defs[name]}); err != nil {
			return err
		}
	}
	return nil
}

func echo(_ context.Context, _ *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
	return input, nil
}

func sleeper(clock clockwork.Clock) workflow.Func {
	return func(ctx context.Context, _ *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			MS int64 `json:"ms"`
		}
		if err := decodeStrict(input, &in); err != nil || in.MS < 0 || in.MS > MaxSleep.Milliseconds() {
			return nil, workflow.Fail(dockettype.CodeInvalidInput, sleepInputMessage, false)
		}
		select {
		case <-clock.After(time.Duration(in.MS) * time.Millisecond):
			return json.RawMessage(`{"slept_ms":` + jsonInt(in.MS) + `}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Messages of the demo workflows' invalid_input failures.
var (
	sleepInputMessage = fmt.Sprintf(`input must be {"ms": N} with N from 0 to %d`, MaxSleep.Milliseconds())
	failInputMessage  = `input must be {"code": "…", "retryable"?: bool} with a non-empty code`
)

// fail fails with the code and retryability its input asks for. Its
// message is fixed: a message never echoes the input.
func fail(_ context.Context, _ *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Code      string `json:"code"`
		Retryable bool   `json:"retryable"`
	}
	if err := decodeStrict(input, &in); err != nil || in.Code == "" {
		return nil, workflow.Fail(dockettype.CodeInvalidInput, failInputMessage, false)
	}
	return nil, workflow.Fail(dockettype.Code(in.Code), "demo.fail failed as its input asked", in.Retryable)
}

func decodeStrict(input json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func jsonInt(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
