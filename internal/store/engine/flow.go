package engine

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/fairshare"
)

// Flow control in the claim (see docs/flow-control.md).
//
// A claim reads the pauses and rate limits in force in its first
// statement. When there are none, the claim is the plain one (claim.go).
// Otherwise it leaves out the paused tenants when it reads the ready ones,
// picks each granted tenant's first ready tasks of workflows that are not
// paused or out of tokens, takes the tokens those tasks need, and starts
// them. A tenant that comes up short is left out of the next round, so that
// a tenant whose ready tasks are all held back does not hold up the others.

// Rate limits count starts in 20 ms ticks of the claim's clock (the time
// its events carry).
const (
	flowRounds      = 4
	throttleMark    = time.Second     // how often a claim records a limit's throttling
	throttledRecent = 2 * time.Second // a limit throttled this recently holds its tasks (waiting_on)
	tickMS          = 20
	ticksPerSec     = 1000 / tickMS
	// lookback is how many ticks before its own a claim may still take
	// starts of, oldest first: a claimer that woke up to 60 ms late (a
	// busy machine) loses none of a tick's starts, and a slow rate's
	// single start in a few ticks is not missed.
	lookback = 3
)

// TickMS is the length of a rate-limit tick, in milliseconds.
func TickMS(int) int64 { return tickMS }

// Allowance is how many starts tick i gives a limit of rate starts per
// second with burst. The allowances of n consecutive ticks sum to
// floor((j+n)·c) − floor(j·c) < n·c + 1, for c = min(rate/50,
// (rate+burst)/(51+lookback)). A one-second window of milliseconds meets at
// most 51 ticks, and its starts took their tokens from those or from the
// lookback ticks before them: fewer than (51+lookback)·c + 1 <= rate+burst+1,
// so at most rate+burst starts. A limit hit steadily starts rate per second
// when burst >= rate·(1+lookback)/50, a little less otherwise (the bound
// wins).
func Allowance(rate, burst int, i int64) int {
	if rate <= 0 {
		return 0
	}
	num, den := int64(rate), int64(ticksPerSec)
	if int64(rate+burst)*ticksPerSec < int64(rate)*(ticksPerSec+1+lookback) {
		num, den = int64(rate+burst), ticksPerSec+1+lookback
	}
	return int((i+1)*num/den - i*num/den)
}

// TokenAsk asks for up to Want starts of one limit in one tick (named by
// its first millisecond), of at most Cap in all.
type TokenAsk struct {
	Target store.FlowTarget
	Tick   int64 // the tick's start, Unix milliseconds
	Cap    int
	Want   int
}

// Candidate is a ready task a flow claim may start.
type Candidate struct {
	ID       string
	Workflow string
}

// KeyRef names a concurrency key: its tenant, workflow and key.
type KeyRef struct {
	Tenant, Workflow, Key string
}

func compareKeys(a, b KeyRef) int {
	return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Key, b.Key))
}

// KeySlots are a key's tasks that hold a slot (queued or running, not
// waiting on the key) and the workflow's concurrency per key.
type KeySlots struct {
	Active, Limit int
}

// KeyDelta changes the slots a key's tasks hold.
type KeyDelta struct {
	KeyRef
	N int
}

// flowSteps are the steps of flow control.
type flowSteps interface {
	// Candidates locks and returns up to limit ready tasks of a tenant in
	// queue in dispatch order, leaving out the workflows given, skipping
	// rows other transactions hold.
	Candidates(queue store.Queue, tenant string, limit int, exceptWorkflows []string) ([]Candidate, error)
	// Start moves the (locked, ready) tasks to running as Take does and
	// returns them with their input.
	Start(ids []string, owner string, expires, now time.Time) ([]*store.ClaimedTask, error)
	// TakeTokens takes up to Want of a limit's starts in a tick, never
	// more than Cap in all, and returns how many it took.
	TakeTokens(ask TokenAsk) (int, error)
	// MarkThrottled records that claims found these limits exhausted.
	MarkThrottled(targets []store.FlowTarget, now time.Time) error
	// LockKeys locks the keys' rows (creating them), sorted, and returns
	// their slots.
	LockKeys(keys []KeyRef) (map[KeyRef]KeySlots, error)
	// AddKeySlots adds to the slots of locked keys, sorted.
	AddKeySlots(deltas []KeyDelta) error
	// ReleaseKeys applies the deltas (sorted; N <= 0) and gives each key's
	// free slots to its waiting tasks, highest priority then oldest first:
	// they become queued (delayed until their run_at if it is still ahead)
	// and are returned (Ready: not delayed). With start set, those
	// ChooseHandOff picks (it reads whether a pause or a rate limit of
	// each one's tenant, workflow or pool is in force, in this
	// transaction) are started instead, as Start does, and returned in
	// started, not in moved.
	ReleaseKeys(deltas []KeyDelta, now time.Time, start *store.HandOff) (moved []Moved, started []*store.ClaimedTask, err error)
	// WorkflowKeys returns the keys of a workflow that have waiting tasks.
	WorkflowKeys(workflow string) ([]KeyRef, error)
}

// HandOffCandidate is a task a release gave its key's slot to, as a
// finish's hand-off (store.HandOff) weighs it.
type HandOffCandidate struct {
	Moved
	Priority int
	// Ruled: a pause or a rate limit of its tenant, its workflow or its
	// pool is in force (a claim, which applies it, starts the task).
	Ruled bool
}

// ChooseHandOff returns the indexes of the candidates a finish starts on
// its node: those ready in h.Queue that no pause or rate limit holds,
// highest priority then oldest first, at most h.Limit. It is the rule
// every store's ReleaseKeys follows: SQLite's calls it; PostgreSQL's makes
// the same choice inside the statement that starts the tasks (see
// promoteWaitingSQL), one round trip instead of two, and the conformance
// cases of the hand-off hold both to it.
func ChooseHandOff(cands []HandOffCandidate, h *store.HandOff) []int {
	var idx []int
	for i, c := range cands {
		if c.Ready && !c.Ruled && c.Queue == h.Queue {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(cands[b].Priority, cands[a].Priority), cmp.Compare(cands[a].TaskID, cands[b].TaskID))
	})
	return idx[:min(len(idx), max(h.Limit, 0))]
}

// HeldUntil is the run_after of a task waiting on its concurrency key: no
// promotion reaches it; a release sets it to the task's run_at or clears
// it.
var HeldUntil = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// flowRules indexes the pauses and rate limits a claim read.
type flowRules map[store.FlowTarget]store.FlowRule

func newFlowRules(rules []store.FlowRule) flowRules {
	if len(rules) == 0 {
		return nil
	}
	out := make(flowRules, len(rules))
	for _, r := range rules {
		out[r.FlowTarget] = r
	}
	return out
}

func (f flowRules) paused(scope, key string) bool {
	return f[store.FlowTarget{Scope: scope, Key: key}].Paused
}

func (f flowRules) rate(scope, key string) (store.FlowRule, bool) {
	r, ok := f[store.FlowTarget{Scope: scope, Key: key}]
	return r, ok && r.RatePerSecond > 0
}

func (f flowRules) keys(scope string, pred func(store.FlowRule) bool) []string {
	var out []string
	for t, r := range f {
		if t.Scope == scope && pred(r) {
			out = append(out, t.Key)
		}
	}
	slices.Sort(out)
	return out
}

// flowClaim is one flow-controlled claim.
type flowClaim struct {
	tx        Tx
	p         *store.ClaimParams
	rules     flowRules
	now       int64 // the claim's time, Unix milliseconds
	throttled map[store.FlowTarget]bool
	outcome   store.ClaimOutcome
}

// claimFlow claims under pauses and rate limits; see the comment at the
// top of the file.
func claimFlow(tx Tx, p *store.ClaimParams, rules flowRules, c *changes) ([]*store.ClaimedTask, error) {
	f := &flowClaim{tx: tx, p: p, rules: rules, now: ts(p.Now).UnixMilli(), throttled: map[store.FlowTarget]bool{}}
	claimed, rows, err := f.claim()
	if err != nil {
		return nil, err
	}
	if p.Outcome != nil {
		f.outcome.More = len(claimed) >= p.Limit // held-back tasks wait for their limit, not for this claimer
		*p.Outcome = f.outcome
	}
	for _, ct := range claimed {
		c.event(ct.Task.ID, dockettype.StateQueued, dockettype.StateRunning, ct.Task.LeaseEpoch, "")
	}
	if err := c.flush(tx, p.Now); err != nil {
		return nil, err
	}
	if err := f.mark(); err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b TenantQueue) int { return cmp.Compare(a.Tenant, b.Tenant) })
	if len(rows) == 0 {
		return claimed, nil
	}
	return claimed, tx.SetTenantQueues(p.Queue, rows)
}

func (f *flowClaim) claim() ([]*store.ClaimedTask, []TenantQueue, error) {
	q := f.p.Queue
	if f.rules.paused(store.ScopePool, string(q.Pool())) || (q.Remote() && f.rules.paused(store.ScopeWorkflow, q.Workflow())) ||
		(f.p.Tenant != "" && f.rules.paused(store.ScopeTenant, f.p.Tenant)) {
		return nil, nil, nil
	}
	isPaused := func(r store.FlowRule) bool { return r.Paused }
	exceptTenants := f.rules.keys(store.ScopeTenant, isPaused)
	exceptWorkflows := f.rules.keys(store.ScopeWorkflow, isPaused)
	var claimed []*store.ClaimedTask
	byTenant := map[string]*TenantQueue{}
	left := f.p.Limit
	for round := 0; round < flowRounds && left > 0; round++ {
		tenants, err := f.tx.ReadyTenants(q, f.p.Tenant, left, exceptTenants)
		if err != nil {
			return nil, nil, err
		}
		if len(tenants) == 0 {
			break
		}
		plan := fairshare.Allocate(tenants, left)
		for _, g := range plan.Grants {
			started, short, err := f.serve(g, &exceptWorkflows)
			if err != nil {
				return nil, nil, err
			}
			if short {
				exceptTenants = append(exceptTenants, g.Tenant)
			}
			if len(started) == 0 {
				continue
			}
			row := byTenant[g.Tenant]
			if row == nil {
				row = &TenantQueue{Tenant: g.Tenant}
				byTenant[g.Tenant] = row
			}
			row.Charge += g.Charge(len(started))
			row.Taken += len(started)
			claimed = append(claimed, dispatchOrder(started)...)
			left -= len(started)
		}
	}
	rows := make([]TenantQueue, 0, len(byTenant))
	for _, r := range byTenant {
		rows = append(rows, *r)
	}
	return claimed, rows, nil
}

// serve starts up to g.Count of a tenant's ready tasks that no pause or
// rate limit holds back. short: the tenant had fewer than granted that
// could start (and no workflow was newly left out, which could leave it
// others), so later rounds leave it out.
func (f *flowClaim) serve(g fairshare.Grant, exceptWorkflows *[]string) ([]*store.ClaimedTask, bool, error) {
	want := g.Count
	if r, ok := f.rules.rate(store.ScopeTenant, g.Tenant); ok {
		got, err := f.tokens(r, want)
		if err != nil || got == 0 {
			f.outcome.Throttled += want
			return nil, true, err
		}
		want = got
	}
	// Lock no more candidates than the rate-limited workflows can start:
	// each locked row is a write.
	for t, r := range f.rules {
		if t.Scope == store.ScopeWorkflow && r.RatePerSecond > 0 && !slices.Contains(*exceptWorkflows, t.Key) &&
			(!f.p.Queue.Remote() || f.p.Queue.Workflow() == t.Key) {
			want = min(want, max(f.tokensAhead(r), 1))
		}
	}
	cands, err := f.tx.Candidates(f.p.Queue, g.Tenant, want, *exceptWorkflows)
	if err != nil {
		return nil, false, err
	}
	// Tokens of each rate-limited workflow among the candidates, taken
	// for as many as there are; a workflow short of them is left out of
	// the rest of the claim.
	count := map[string]int{}
	for _, c := range cands {
		count[c.Workflow]++
	}
	allowed := map[string]int{}
	excluded := false // a workflow ran out of tokens: the tenant may have others
	for _, wf := range slices.Sorted(maps.Keys(count)) {
		r, ok := f.rules.rate(store.ScopeWorkflow, wf)
		if !ok {
			allowed[wf] = count[wf]
			continue
		}
		got, err := f.tokens(r, count[wf])
		if err != nil {
			return nil, false, err
		}
		allowed[wf] = got
		if got < count[wf] {
			f.outcome.Throttled += count[wf] - got
			*exceptWorkflows = append(*exceptWorkflows, wf)
			excluded = true
		}
	}
	var ids []string
	for _, c := range cands {
		if allowed[c.Workflow] > 0 {
			allowed[c.Workflow]--
			ids = append(ids, c.ID)
		}
	}
	var started []*store.ClaimedTask
	if len(ids) > 0 {
		if started, err = f.tx.Start(ids, f.p.Owner, f.p.Now.Add(f.p.LeaseTTL), f.p.Now); err != nil {
			return nil, false, err
		}
	}
	return started, len(started) < g.Count && !excluded, nil
}

// tokensAhead bounds the starts a rate limit can give this claim: the
// allowances of its tick and the lookback ticks before it.
func (f *flowClaim) tokensAhead(r store.FlowRule) int {
	tick := f.now / TickMS(r.RatePerSecond)
	n := 0
	for i := tick - lookback; i <= tick; i++ {
		n += Allowance(r.RatePerSecond, r.Burst, i)
	}
	return n
}

// tokens takes up to want starts of a rate limit: from the lookback
// ticks before the claim's, oldest first, then from its own.
func (f *flowClaim) tokens(r store.FlowRule, want int) (int, error) {
	tms := TickMS(r.RatePerSecond)
	tick := f.now / tms
	got := 0
	for i := tick - lookback; i <= tick && got < want; i++ {
		allowance := Allowance(r.RatePerSecond, r.Burst, i)
		if allowance == 0 {
			continue
		}
		n, err := f.tx.TakeTokens(TokenAsk{Target: r.FlowTarget, Tick: i * tms, Cap: allowance, Want: want - got})
		if err != nil {
			return 0, err
		}
		got += n
	}
	if got < want {
		f.throttled[r.FlowTarget] = true
		// The next tick that has starts to give.
		for next := tick + 1; next <= tick+1000/tms+1; next++ {
			if Allowance(r.RatePerSecond, r.Burst, next) > 0 {
				if at := time.UnixMilli(next * tms).UTC(); f.outcome.RetryAt.IsZero() || at.Before(f.outcome.RetryAt) {
					f.outcome.RetryAt = at
				}
				break
			}
		}
	}
	return got, nil
}

// mark records the limits this claim found exhausted, at most once per
// throttleMark per limit (the rule's row is written only then).
func (f *flowClaim) mark() error {
	var targets []store.FlowTarget
	for t := range f.throttled {
		if at := f.rules[t].ThrottledAt; at == nil || f.p.Now.Sub(*at) >= throttleMark {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	slices.SortFunc(targets, func(a, b store.FlowTarget) int {
		return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Key, b.Key))
	})
	return f.tx.MarkThrottled(targets, f.p.Now)
}

// keyRelease counts the key slots a transaction's moves free.
func (c *changes) keyReleased(m Moved) {
	if m.KeySlot && m.Key != "" {
		if c.keys == nil {
			c.keys = map[KeyRef]int{}
		}
		c.keys[KeyRef{Tenant: m.Tenant, Workflow: m.Workflow, Key: m.Key}]--
	}
}

// keyWaits notes a key that has a task waiting again (a retried task):
// the flush gives it a free slot of the key, if there is one.
func (c *changes) keyWaits(k KeyRef) {
	if c.keys == nil {
		c.keys = map[KeyRef]int{}
	}
	c.keys[k] += 0
}

// flushKeys releases the freed slots and starts the tasks that waited on
// them; their tenants' ready counts change with the rest (flushQueued).
func (c *changes) flushKeys(tx Tx, now time.Time) error {
	if len(c.keys) == 0 {
		return nil
	}
	deltas := make([]KeyDelta, 0, len(c.keys))
	for k, n := range c.keys {
		deltas = append(deltas, KeyDelta{KeyRef: k, N: n})
	}
	clear(c.keys)
	slices.SortFunc(deltas, func(a, b KeyDelta) int { return compareKeys(a.KeyRef, b.KeyRef) })
	promoted, started, err := tx.ReleaseKeys(deltas, now, c.handOff)
	if err != nil {
		return err
	}
	for _, m := range promoted {
		if m.Ready {
			c.ready(m.Queue, m.Tenant, 1)
		}
	}
	if len(started) > 0 {
		// Started by the finish on its own node (store.HandOff): they
		// were never ready, so no ready count changes.
		for _, ct := range started {
			c.event(ct.Task.ID, dockettype.StateQueued, dockettype.StateRunning, ct.Task.LeaseEpoch, "")
		}
		c.handOff.Started = append(c.handOff.Started, dispatchOrder(started)...)
	}
	return nil
}

// admitKeys decides which admitted items with a concurrency key take a
// slot now and which wait: in batch order, while the key has slots free.
// It returns the items that wait.
//
// An item that waits on dependencies takes no slot at admission: it waits
// on its key once they are done (settleDependents).
func admitKeys(tx Tx, items []*store.AdmitItem, admitted []int, plan *dependencyPlan) (map[string]bool, error) {
	var refs []KeyRef
	held := map[string]bool{}
	for _, i := range admitted {
		it := items[i]
		switch {
		case it.ConcurrencyKey == "":
		case plan.waiting(it.TaskID):
			held[it.TaskID] = true
		default:
			refs = append(refs, KeyRef{Tenant: it.Tenant, Workflow: it.Workflow, Key: it.ConcurrencyKey})
		}
	}
	if len(refs) == 0 {
		return held, nil
	}
	slices.SortFunc(refs, compareKeys)
	refs = slices.Compact(refs)
	slots, err := tx.LockKeys(refs)
	if err != nil {
		return nil, err
	}
	added := map[KeyRef]int{}
	for _, i := range admitted {
		it := items[i]
		if it.ConcurrencyKey == "" || plan.waiting(it.TaskID) {
			continue
		}
		k := KeyRef{Tenant: it.Tenant, Workflow: it.Workflow, Key: it.ConcurrencyKey}
		s := slots[k]
		if s.Limit < 1 {
			s.Limit = 1
		}
		if s.Active+added[k] < s.Limit {
			added[k]++
			continue
		}
		held[it.TaskID] = true
	}
	var deltas []KeyDelta
	for _, k := range refs {
		if n := added[k]; n > 0 {
			deltas = append(deltas, KeyDelta{KeyRef: k, N: n})
		}
	}
	if len(deltas) > 0 {
		if err := tx.AddKeySlots(deltas); err != nil {
			return nil, err
		}
	}
	return held, nil
}
