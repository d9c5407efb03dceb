package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Admit runs a batch of admissions in one transaction; see store.Admitter.
//
// Existing bindings answer replays and conflicts first. The rest are
// checked in order against the in-flight counts of their pools and tenants:
// capacity, then the tenant's limit. Admitted items bind their key; an item
// whose key another transaction bound meanwhile (it committed while this
// one waited on the key) is answered from that binding instead. Then the
// tasks, their history and the counters are written.
//
// The counts are exact because the admission holds its pools' and tenants'
// gate rows locked from when it checks them until it commits, so admissions
// to one pool serialize there. On a backend whose transactions run
// concurrently (a GateReader), the admission first decides on the counts as
// committed, writes the rows no other transaction sees (bindings, tasks),
// and only then locks the gates and checks its decisions against the counts
// under the locks: the serialized part is the counters, the history and the
// commit. When another admission took the room meanwhile, the transaction
// is rolled back and run again deciding under the locks, as on one writer.
// That run takes the gates before the bindings, the other order: it and an
// admission of the same key at the same moment can deadlock, which the
// database detects and the backend resolves by running the loser again.
func (s *Store) Admit(ctx context.Context, p *store.AdmitParams) ([]store.AdmitResult, error) {
	for _, it := range p.Items {
		switch {
		case it.TaskID == "", it.Tenant == "", it.IdempotencyKey == "":
			return nil, invalid("admit", "task ID, tenant and idempotency key are required")
		case it.Queue != "" && (!it.Queue.Valid() || it.Queue.Pool() != it.Pool):
			return nil, invalid("admit", fmt.Sprintf("queue %q is not of pool %q", it.Queue, it.Pool))
		case !it.Pool.Valid():
			return nil, invalid("admit", "unknown pool")
		case it.MaxAttempts < 1:
			return nil, invalid("admit", "max attempts below 1")
		case it.ConcurrencyKey != "" && !dockettype.ValidConcurrencyKey(it.ConcurrencyKey):
			return nil, invalid("admit", "concurrency key is not 1 to 255 visible ASCII characters")
		}
	}
	if len(p.Items) == 0 {
		return []store.AdmitResult{}, nil
	}
	var out []store.AdmitResult
	var created []string
	run := func(lateGates bool) error {
		return s.b.Write(ctx, "admit", func(tx Tx) error {
			var err error
			out, created, err = admit(tx, p, s.known, lateGates)
			return err
		})
	}
	err := run(true)
	if errors.Is(err, errGatesMoved) {
		err = run(false)
	}
	if err != nil {
		return nil, err
	}
	for _, t := range created {
		s.tenants.Store(t, true) // committed: known from now on
	}
	return out, nil
}

// errGatesMoved: between an admission's unlocked read of its gates and its
// locks, other admissions took the room it had counted on.
var errGatesMoved = errors.New("admit: gates moved since read")

// known reports whether a tenant is known to exist with its counter rows.
func (s *Store) known(tenant string) bool {
	_, ok := s.tenants.Load(tenant)
	return ok
}

// admit decides and writes one batch; it returns the answers and the
// tenants it made sure exist. With lateGates and a GateReader it locks the
// gates after writing the rows (see Admit).
func admit(tx Tx, p *store.AdmitParams, known func(string) bool, lateGates bool) ([]store.AdmitResult, []string, error) {
	items := p.Items
	out := make([]store.AdmitResult, len(items))
	names := make([]string, len(items)) // the task each answer names, if any

	keys := make([]TenantKey, 0, len(items))
	for _, it := range items {
		keys = append(keys, keyOf(it))
	}
	bound, err := tx.Bindings(keys)
	if err != nil {
		return nil, nil, err
	}

	// The tasks the candidates depend on are read (and locked) before the
	// gates: a transaction ending a task locks its row before any counter.
	var deps *admissionDeps
	if hasDeps(items) {
		if deps, err = readDeps(tx, items, func(i int) bool { _, ok := bound[keyOf(items[i])]; return !ok }); err != nil {
			return nil, nil, err
		}
	}

	// The candidates: items whose key is not bound yet.
	var pools []dockettype.Pool
	var tenants []string
	for _, it := range items {
		if _, ok := bound[keyOf(it)]; !ok {
			pools = append(pools, it.Pool)
			tenants = append(tenants, it.Tenant)
		}
	}
	pools, tenants = sortedUnique(pools), sortedUnique(tenants)
	reader, late := tx.(GateReader)
	late = late && lateGates
	var gates *Gates
	if len(pools) > 0 {
		var unknown []string
		for _, t := range tenants {
			if !known(t) {
				unknown = append(unknown, t)
			}
		}
		if len(unknown) > 0 {
			if err := tx.EnsureTenants(unknown, p.NewTenantLimit, p.Now); err != nil {
				return nil, nil, err
			}
		}
		if late {
			gates, err = reader.ReadGates(pools, tenants)
		} else {
			gates, err = tx.LockGates(pools, tenants)
		}
		if err != nil {
			return nil, nil, err
		}
	}

	admitted := decide(items, bound, gates, deps, out, names)
	if admitted, err = bind(tx, items, admitted, out, names, p.Now); err != nil {
		return nil, nil, err
	}
	var plan *dependencyPlan
	if deps != nil {
		if plan, err = planDeps(tx, items, admitted, names, deps); err != nil {
			return nil, nil, err
		}
	}

	c := newChanges()
	held, err := admitKeys(tx, items, admitted, plan)
	if err != nil {
		return nil, nil, err
	}
	if len(admitted) > 0 {
		newTasks := make([]*store.AdmitItem, len(admitted))
		inFlight := map[counterKey]counterChange{}
		for n, i := range admitted {
			it := items[i]
			newTasks[n] = it
			pool, tenant := inFlight[counterKey{ScopePool, string(it.Pool)}], inFlight[counterKey{ScopeTenant, it.Tenant}]
			pool.n++
			tenant.n++
			tenant.bytes += it.InputBytes()
			inFlight[counterKey{ScopePool, string(it.Pool)}], inFlight[counterKey{ScopeTenant, it.Tenant}] = pool, tenant
			c.event(it.TaskID, "", dockettype.StateQueued, 0, "")
			if !delayed(it, p) && !plan.waiting(it.TaskID) && !held[it.TaskID] {
				c.ready(it.QueueOf(), it.Tenant, 1)
			}
		}
		if err := tx.InsertTasks(newTasks, held, p.Now); err != nil {
			return nil, nil, err
		}
		if err := plan.write(tx, c, p.Now); err != nil {
			return nil, nil, err
		}
		// The tasks are rows no other transaction sees before the commit:
		// with late gates they are written before the gates are locked.
		// The history is written after: an admission's events take their
		// IDs once it holds its gates, so replaying admissions and
		// releases in event-ID order follows the order the gates saw
		// (docket faultcheck's admission check relies on it).
		if late {
			if err := checkUnderLocks(tx, items, admitted); err != nil {
				return nil, nil, err
			}
		}
		deltas := make([]CounterDelta, 0, len(inFlight))
		for k, v := range inFlight {
			deltas = append(deltas, CounterDelta{Scope: k.scope, Key: k.key, N: v.n, Bytes: v.bytes})
		}
		slices.SortFunc(deltas, func(a, b CounterDelta) int {
			return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Key, b.Key))
		})
		if err := tx.AddInFlight(deltas, false); err != nil {
			return nil, nil, err
		}
	}
	if err := c.flush(tx, p.Now); err != nil {
		return nil, nil, err
	}

	// A new task is answered as written; a replay reads the earlier task.
	var ids []string
	for i, id := range names {
		switch {
		case id == "":
		case out[i].Outcome == store.Admitted:
			out[i].Task = newTask(items[i], p.Now)
			switch {
			case held[items[i].TaskID]:
				out[i].Task.WaitingOn = Waiting(store.WaitingOnConcurrencyKey)
			case delayed(items[i], p):
				out[i].Task.WaitingOn = Waiting(store.WaitingOnRunAt)
			}
			plan.answer(out[i].Task, i, p.Now)
		default:
			ids = append(ids, id)
		}
	}
	if plan.cascaded() {
		// A dependency had already failed: the tasks it ended (and theirs
		// in the batch) are answered as they now are.
		if err := plan.reread(tx, out); err != nil {
			return nil, nil, err
		}
	}
	if len(ids) == 0 {
		return out, tenants, nil
	}
	tasks, err := tx.ReadTasks(ids)
	if err != nil {
		return nil, nil, err
	}
	for i, id := range names {
		if id == "" || out[i].Task != nil {
			continue
		}
		if out[i].Task = tasks[id]; out[i].Task == nil {
			// Replaying a task admitted earlier in this batch.
			for j, it := range items {
				if it.TaskID == id && out[j].Outcome == store.Admitted {
					out[i].Task = out[j].Task
				}
			}
		}
		if out[i].Task == nil {
			return nil, nil, errBindingVanished
		}
	}
	return out, tenants, nil
}

// keyOf is an item's idempotency key.
func keyOf(it *store.AdmitItem) TenantKey { return TenantKey{it.Tenant, it.IdempotencyKey} }

// decide answers items in order: a bound key as a replay or conflict, a key
// seen earlier in the batch like a binding would, the rest against gates,
// which it counts up. It returns the indexes of the items it admitted.
func decide(items []*store.AdmitItem, bound map[TenantKey]Binding, gates *Gates, deps *admissionDeps,
	out []store.AdmitResult, names []string) []int {
	byKey := map[TenantKey]int{} // key → index of the item that admitted it
	var admitted []int
	for i, it := range items {
		k := keyOf(it)
		if b, ok := bound[k]; ok {
			out[i], names[i] = answerFromBinding(b, it)
			continue
		}
		if j, ok := byKey[k]; ok {
			out[i], names[i] = answerFromBinding(Binding{RequestHash: items[j].RequestHash, TaskID: items[j].TaskID}, it)
			continue
		}
		if deps != nil && len(it.DependsOn) > 0 && (deps.refused(items, i) || deps.batchRefused(i, out)) {
			out[i] = store.AdmitResult{Outcome: store.DependencyNotFound}
			continue
		}
		if gates.refuses(it.Pool, it.Tenant, it.Workflow) {
			out[i] = store.AdmitResult{Outcome: store.SubmissionsPaused}
			continue
		}
		if o := take(gates, it); o != store.Admitted {
			out[i] = store.AdmitResult{Outcome: o}
			continue
		}
		byKey[k] = i
		admitted = append(admitted, i)
		out[i], names[i] = store.AdmitResult{Outcome: store.Admitted}, it.TaskID
	}
	return admitted
}

// take checks one item against capacity, then its tenant's limit, then
// its tenant's storage quota, and counts it in gates when it fits. (A
// submission is checked against the pauses that refuse submissions first,
// by its caller; a retry is not a submission.)
func take(gates *Gates, it *store.AdmitItem) store.AdmitOutcome {
	if capacity := it.PoolCapacity; capacity > 0 && gates.Pools[it.Pool] >= int64(capacity) {
		return store.QueueFull
	}
	tg := gates.Tenants[it.Tenant]
	if tg.MaxInFlight > 0 && tg.InFlight >= int64(tg.MaxInFlight) {
		return store.TenantQuotaExceeded
	}
	quota := tg.StorageQuota
	if quota == NoStorageQuota {
		quota = it.StorageQuota
	}
	if quota > 0 && tg.StoredBytes+it.InputBytes() > quota {
		return store.StorageQuotaExceeded
	}
	gates.Pools[it.Pool]++
	tg.InFlight++
	tg.StoredBytes += it.InputBytes()
	gates.Tenants[it.Tenant] = tg
	return store.Admitted
}

// checkUnderLocks locks the gates of the admitted items' pools and tenants
// and checks that every admission decided on the unlocked counts still
// fits; errGatesMoved when one does not.
func checkUnderLocks(tx Tx, items []*store.AdmitItem, admitted []int) error {
	var pools []dockettype.Pool
	var tenants []string
	for _, i := range admitted {
		pools = append(pools, items[i].Pool)
		tenants = append(tenants, items[i].Tenant)
	}
	locked, err := tx.LockGates(sortedUnique(pools), sortedUnique(tenants))
	if err != nil {
		return err
	}
	for _, i := range admitted {
		it := items[i]
		if locked.refuses(it.Pool, it.Tenant, it.Workflow) || take(locked, it) != store.Admitted {
			return errGatesMoved
		}
	}
	return nil
}

// bind inserts the admitted items' bindings, sorted by key (so that
// admissions binding the same keys take them in one order). An item whose
// key another transaction bound first is answered from that binding (its
// room is simply not taken); bind returns the items still admitted.
func bind(tx Tx, items []*store.AdmitItem, admitted []int, out []store.AdmitResult, names []string,
	now time.Time) ([]int, error) {
	if len(admitted) == 0 {
		return admitted, nil
	}
	rows := make([]Binding, len(admitted))
	for n, i := range admitted {
		it := items[i]
		rows[n] = Binding{TenantKey: keyOf(it), RequestHash: it.RequestHash, TaskID: it.TaskID}
	}
	slices.SortFunc(rows, func(a, b Binding) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Key, b.Key))
	})
	inserted, err := tx.InsertBindings(rows, now)
	if err != nil {
		return nil, err
	}
	if len(inserted) == len(rows) {
		return admitted, nil
	}
	var lost []TenantKey
	for _, r := range rows {
		if !inserted[r.TenantKey] {
			lost = append(lost, r.TenantKey)
		}
	}
	winners, err := tx.Bindings(lost)
	if err != nil {
		return nil, err
	}
	kept := admitted[:0]
	for _, i := range admitted {
		k := keyOf(items[i])
		if inserted[k] {
			kept = append(kept, i)
			continue
		}
		b, ok := winners[k]
		if !ok {
			return nil, errBindingVanished
		}
		// This item, and any later item of the batch with the same key,
		// answer from the winner's binding.
		for j := i; j < len(items); j++ {
			if keyOf(items[j]) == k {
				out[j], names[j] = answerFromBinding(b, items[j])
			}
		}
	}
	return kept, nil
}

// newTask is the task an admission writes, as the store returns it.
func newTask(it *store.AdmitItem, now time.Time) *dockettype.Task {
	t := &dockettype.Task{
		ID: it.TaskID, Tenant: it.Tenant, Author: it.Author, Workflow: it.Workflow, Pool: it.Pool,
		State: dockettype.StateQueued, MaxAttempts: it.MaxAttempts, Priority: it.Priority,
		CreatedAt: ts(now), DeadlineAt: ts(it.DeadlineAt), TraceID: it.TraceID, ConfigVersion: it.ConfigVersion,
		ConcurrencyKey: it.ConcurrencyKey,
	}
	if !it.RunAt.IsZero() {
		r := ts(it.RunAt)
		t.RunAt = &r
	}
	return t
}

// answerFromBinding answers an item whose key is already bound, and names
// the bound task when it is a replay.
func answerFromBinding(b Binding, it *store.AdmitItem) (store.AdmitResult, string) {
	if b.RequestHash != it.RequestHash {
		return store.AdmitResult{Outcome: store.IdempotencyConflict}, ""
	}
	return store.AdmitResult{Outcome: store.Replayed}, b.TaskID
}

// delayed reports whether an admitted task waits for its run_at.
func delayed(it *store.AdmitItem, p *store.AdmitParams) bool {
	return !it.RunAt.IsZero() && it.RunAt.After(p.Now)
}

func sortedUnique[T cmp.Ordered](v []T) []T {
	slices.Sort(v)
	return slices.Compact(v)
}
