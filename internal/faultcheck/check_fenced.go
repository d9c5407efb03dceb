package faultcheck

import (
	"encoding/json"

	"github.com/docket-dev/docket/dockettype"
)

// checkFenced: a late result never lands. A task that succeeded carries
// the result its probe wrote under the lease its success event names, and
// (when executions were logged) that execution is in the logs.
func checkFenced(p *parsed, r *Result) {
	for _, id := range p.ids {
		tv := p.db[id]
		if tv.Task.State != dockettype.StateSucceeded {
			continue
		}
		var successEpoch int64 = -1
		for _, ev := range tv.Events {
			if ev.To == dockettype.StateSucceeded {
				successEpoch = ev.Epoch
			}
		}
		var res probeResult
		switch err := json.Unmarshal(tv.Task.Result, &res); {
		case err != nil || res.Task != id:
			r.flag(AnomalyFence, "task %s succeeded with a result its probe did not write", id)
		case res.Epoch != successEpoch:
			r.flag(AnomalyFence, "task %s succeeded under epoch %d with the result of the execution under epoch %d", id, successEpoch, res.Epoch)
		default:
			if x := p.execs[lease{id, res.Epoch}]; (x == nil || x.starts == 0) && len(p.in.Execs) > 0 {
				r.flag(AnomalyFence, "task %s carries the result of epoch %d, whose execution no log recorded", id, res.Epoch)
			}
		}
	}
}
