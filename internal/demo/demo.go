// Package demo registers the demo-mode workflows: demo.echo returns its
// input, demo.sleep waits ({"ms": N}) and honours cancellation, demo.fail
// fails with a chosen code ({"code": "…", "retryable": bool}). All three run
// on the online pool unless a submission names another.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
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
		if err := decodeStrict(input, &in); err != nil || in.MS < 0 || time.Duration(in.MS)*time.Millisecond > MaxSleep {
			return nil, workflow.Fail(dockettype.CodeInvalidInput, false)
		}
		select {
		case <-clock.After(time.Duration(in.MS) * time.Millisecond):
			return json.RawMessage(`{"slept_ms":` + jsonInt(in.MS) + `}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func fail(_ context.Context, _ *workflow.Binding, input json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Code      string `json:"code"`
		Retryable bool   `json:"retryable"`
	}
	if err := decodeStrict(input, &in); err != nil || in.Code == "" {
		return nil, workflow.Fail(dockettype.CodeInvalidInput, false)
	}
	return nil, workflow.Fail(dockettype.Code(in.Code), in.Retryable)
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
