package faultcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// checkViews compares the store's answers with the HTTP API's for every
// terminal task (a task still moving may differ between the two reads).
func checkViews(p *parsed, r *Result) {
	s := p.in.Snapshot
	if s.API == nil {
		return
	}
	for _, id := range p.ids {
		st := p.db[id]
		if !st.Task.State.Terminal() {
			continue
		}
		api, ok := s.API[id]
		if !ok {
			r.flag(AnomalyViews, "task %s: the store holds it, the API does not answer it", id)
			continue
		}
		if msg := viewDiff(st, api); msg != "" {
			r.flag(AnomalyViews, "task %s: %s", id, msg)
		}
	}
}

func viewDiff(a, b *TaskView) string {
	ta, tb := a.Task, b.Task
	switch {
	case ta.State != tb.State:
		return fmt.Sprintf("state %s in the store, %s over HTTP", ta.State, tb.State)
	case ta.Attempt != tb.Attempt:
		return fmt.Sprintf("attempt %d in the store, %d over HTTP", ta.Attempt, tb.Attempt)
	case ta.Tenant != tb.Tenant:
		return "tenants differ"
	case !jsonEqual(ta.Result, tb.Result):
		return "results differ"
	case len(a.Events) != len(b.Events):
		return fmt.Sprintf("%d events in the store, %d over HTTP", len(a.Events), len(b.Events))
	}
	for i := range a.Events {
		ea, eb := a.Events[i], b.Events[i]
		if ea.ID != eb.ID || ea.From != eb.From || ea.To != eb.To || ea.Epoch != eb.Epoch || ea.Code != eb.Code {
			return fmt.Sprintf("event %d differs", i)
		}
	}
	return ""
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || string(a) == "null" {
		return len(b) == 0 || string(b) == "null"
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
