package faultcheck

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/docket-dev/docket/dockettype"
)

// Report is the outcome of one scenario.
type Report struct {
	Scenario string `json:"scenario"`
	Store    string `json:"store"`
	Nodes    int    `json:"nodes,omitempty"`
	Seed     uint64 `json:"seed"`
	// Skipped says why the scenario did not run.
	Skipped string `json:"skipped,omitempty"`
	// Error says why the run could not be completed; it fails the run.
	Error       string         `json:"error,omitempty"`
	LoadSeconds float64        `json:"load_seconds,omitempty"`
	Faults      map[string]int `json:"faults,omitempty"`
	// StoreErrors are the servers' failed store operations by operation
	// (docket_store_errors_total), since each server's last start: where
	// the faults landed.
	StoreErrors map[string]int `json:"store_errors,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
	Dir         string         `json:"dir,omitempty"`
	Result      *Result        `json:"result,omitempty"`
}

// Failed reports whether the scenario found an anomaly or could not finish.
func (r *Report) Failed() bool {
	return r.Error != "" || r.Result != nil && r.Result.AnomalyCount() > 0
}

// WriteText prints each report as a block of figures, then one summary
// line.
func WriteText(w io.Writer, reports []*Report) {
	ran, skipped, failed, anomalies := 0, 0, 0, 0
	for _, r := range reports {
		switch {
		case r.Skipped != "":
			skipped++
			fmt.Fprintf(w, "%s (%s): SKIPPED: %s\n\n", r.Scenario, r.Store, r.Skipped)
			continue
		case r.Failed():
			failed++
		}
		ran++
		verdict := "OK"
		switch {
		case r.Error != "":
			verdict = "ERROR: " + r.Error
		case r.Result != nil && r.Result.AnomalyCount() > 0:
			verdict = fmt.Sprintf("FAILED: %d anomalies", r.Result.AnomalyCount())
		}
		fmt.Fprintf(w, "%s (%s, %d node(s), %.1f s of load, seed %d): %s\n", r.Scenario, r.Store, r.Nodes, r.LoadSeconds, r.Seed, verdict)
		row := func(k, format string, a ...any) { fmt.Fprintf(w, "  %-15s "+format+"\n", append([]any{k}, a...)...) }
		if len(r.Faults) > 0 {
			row("faults", "%s", formatCounts(r.Faults))
		}
		if len(r.StoreErrors) > 0 {
			row("store errors", "%s (servers' docket_store_errors_total since their last start)", formatCounts(r.StoreErrors))
		}
		for _, n := range r.Notes {
			row("note", "%s", n)
		}
		res := r.Result
		if res == nil {
			fmt.Fprintln(w)
			continue
		}
		anomalies += res.AnomalyCount()
		row("operations", "%d (submits %d, reads %d, cancels %d; indeterminate %d)", res.Operations, res.Submits, res.Reads, res.Cancels, res.Indeterminate)
		row("acknowledged", "%d tasks (%d found committed only by the replay after the load; %d of those were answered only 503 store_unavailable)",
			res.Acknowledged, res.ResolvedCommitted, res.CommittedDespite503)
		if res.Unresolved > 0 {
			row("unresolved", "%d keys got no answer even when replayed after the load", res.Unresolved)
		}
		row("guarantees", "lost %d · duplicated %d · overwritten terminals %d · stuck after drain %d",
			res.Lost, res.Duplicated, res.OverwrittenTerminals, res.StuckAfterDrain)
		row("other checks", "lifecycle %d · admission over limit %d · reservation leaks %d · executions over attempts %d · fence %d · views disagree %d · replay refused %d · log leaks %d",
			res.Anomalies[AnomalyLifecycle], res.Anomalies[AnomalyAdmission], res.Anomalies[AnomalyReservation], res.Anomalies[AnomalyExecutions],
			res.Anomalies[AnomalyFence], res.Anomalies[AnomalyViews], res.Anomalies[AnomalyReplay], res.Anomalies[AnomalyLogLeak])
		row("shutdown checks", "outcomes lost %d · attempts charged %d · claims lost %d · handed back, not run again %d",
			res.Anomalies[AnomalyOutcomeLost], res.Anomalies[AnomalyCharged], res.Anomalies[AnomalyClaimLost], res.Anomalies[AnomalyNotRerun])
		row("tasks", "%d: %s", res.Tasks, formatStates(res.States))
		if len(res.FailedCodes) > 0 {
			row("failed with", "%s", formatCounts(res.FailedCodes))
		}
		row("executions", "%d under %d claims; %d tasks run again after a lost execution; %d lease recoveries; %d finished results discarded",
			res.Executions, res.Claims, res.ReExecuted, res.LeaseRecoveries, res.DiscardedResults)
		if res.GracefulStops > 0 || res.HandedBack > 0 {
			row("shutdowns", "%d graceful stops (SIGTERM); %d executions finished inside the grace; %d leases handed back",
				res.GracefulStops, res.FinishedInGrace, res.HandedBack)
		}
		row("peak in flight", "%s", formatPeaks(res.PeakInFlight, res.Limits))
		if res.ScheduleFireTimes > 0 {
			row("schedules", "%d fire times, %d with their task · fired twice %d · missed while up %d",
				res.ScheduleFireTimes, res.ScheduleFired, res.Anomalies[AnomalyScheduleTwice], res.Anomalies[AnomalyScheduleMissed])
		}
		if res.DependencyGraphs > 0 {
			row("dependencies", "%d graphs, %d dependents checked (%d ended dependency_failed) · started early %d · left waiting %d",
				res.DependencyGraphs, res.Dependents, res.DependentsFailed, res.Anomalies[AnomalyDependencyEarly], res.Anomalies[AnomalyDependencyWaiting])
		}
		if res.FlowTasks > 0 {
			row("flow", "%d tasks, %d ended · %d starts under the rate limit, at most %d in one second · at most %d running per key · %d started by hand-off · limits exceeded %d",
				res.FlowTasks, res.FlowFinished, res.FlowStarts, res.FlowPeakPerSecond, res.FlowPeakPerKey, res.FlowHandOffs, res.Anomalies[AnomalyFlowLimit])
		}
		for _, f := range res.Findings {
			row("FINDING", "%s", f)
		}
		kinds := make([]string, 0, len(res.Examples))
		for k := range res.Examples {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			for _, e := range res.Examples[k] {
				row("! "+k, "%s", e)
			}
		}
		if r.Failed() && r.Dir != "" {
			row("evidence", "%s (history.jsonl, node logs, execution logs)", r.Dir)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "faultcheck: %d scenario(s) run, %d skipped, %d failed, %d anomalies\n", ran, skipped, failed, anomalies)
}

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func formatStates(m map[dockettype.State]int) string {
	var parts []string
	for _, s := range dockettype.States {
		if n := m[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// formatPeaks prints each peak over its limit: "pool:online 16/16".
func formatPeaks(peaks, limits map[string]int) string {
	keys := make([]string, 0, len(peaks))
	for k := range peaks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		limit := "unbounded"
		if l := limits[k]; l > 0 {
			limit = fmt.Sprint(l)
		}
		parts[i] = fmt.Sprintf("%s %d/%s", k, peaks[k], limit)
	}
	return strings.Join(parts, " · ")
}
