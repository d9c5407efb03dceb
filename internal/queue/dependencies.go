package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// Dependency limits and policies.
const (
	// MaxDependencies is the most tasks one task may depend on.
	MaxDependencies = 10_000

	OnDependencyFailureFail = "fail" // the default: end failed with dependency_failed
	OnDependencyFailureRun  = "run"  // run anyway
)

// validDependencies checks the shape of a request's dependencies.
func validDependencies(req *SubmitRequest) error {
	switch req.OnDependencyFailure {
	case "", OnDependencyFailureFail, OnDependencyFailureRun:
	default:
		return errors.New(`on_dependency_failure must be "fail" or "run"`)
	}
	if len(req.DependsOn) > MaxDependencies {
		return fmt.Errorf("depends_on holds at most %d tasks", MaxDependencies)
	}
	for _, d := range req.DependsOn {
		if ValidIdempotencyKey(d) != nil {
			return errors.New("each depends_on entry must be a task ID (or, in a batch, an earlier item's idempotency key): 1 to 255 visible ASCII characters")
		}
	}
	return nil
}

// checkDependencies refuses items that name a task ID the tenant does not
// have (400 invalid_dependency), before anything is admitted. IDs that are
// the TaskID of an earlier item of items (a batch reference, resolved by
// resolveBatchDependencies) are not read.
func (s *Service) checkDependencies(ctx context.Context, tenant string, items []*store.AdmitItem) error {
	batch := map[string]bool{}
	var ids []string
	for _, it := range items {
		for _, d := range it.DependsOn {
			if !batch[d] {
				ids = append(ids, d)
			}
		}
		batch[it.TaskID] = true
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	qctx, cancel := context.WithTimeout(ctx, s.cfg.QueryTimeout)
	defer cancel()
	found, err := s.store.TaskStates(qctx, &store.TaskStatesParams{Tenant: tenant, IDs: ids})
	if err != nil {
		return s.storeFailure(ctx, "task_states", err)
	}
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			return s.reject(dockettype.CodeInvalidDependency, fmt.Sprintf("depends_on names %s, which is not a task of this tenant", quoteID(id)), 0)
		}
	}
	return nil
}

// resolveBatchDependencies turns the depends_on entries of a batch that
// name the idempotency key of an earlier item into that item's TaskID (the
// store answers it with the task the item is admitted or replayed as). An
// entry naming the key of the item itself or of a later item makes a cycle
// or a forward reference, and one naming an item refused by validation
// cannot wait for it: the whole batch is refused (400 invalid_dependency).
// items[j] is the store item of reqs[at[j]].
func (s *Service) resolveBatchDependencies(reqs []*SubmitRequest, items []*store.AdmitItem, at []int) error {
	keyIndex := map[string]int{} // key → first request index
	for i, r := range reqs {
		if r == nil {
			continue
		}
		if _, dup := keyIndex[r.IdempotencyKey]; !dup {
			keyIndex[r.IdempotencyKey] = i
		}
	}
	itemOf := map[int]*store.AdmitItem{}
	for j, it := range items {
		itemOf[at[j]] = it
	}
	for j, it := range items {
		i := at[j]
		if len(it.DependsOn) == 0 {
			continue
		}
		resolved := make([]string, len(it.DependsOn))
		for k, d := range it.DependsOn {
			ref, isKey := keyIndex[d]
			switch {
			case !isKey:
				resolved[k] = d // a task ID
			case ref >= i:
				if cycle := findCycle(reqs, keyIndex, i); cycle != "" {
					return s.reject(dockettype.CodeInvalidDependency, fmt.Sprintf("item %d: depends_on makes a cycle (%s)", i, cycle), 0)
				}
				return s.reject(dockettype.CodeInvalidDependency,
					fmt.Sprintf("item %d: depends_on names item %d; a batch item may depend only on earlier items", i, ref), 0)
			case itemOf[ref] == nil:
				return s.reject(dockettype.CodeInvalidDependency,
					fmt.Sprintf("item %d: depends_on names item %d, which was refused", i, ref), 0)
			default:
				resolved[k] = itemOf[ref].TaskID
			}
		}
		it.DependsOn = resolved
	}
	return nil
}

// findCycle returns the items of a cycle through request i (as "3 → 5 →
// 3"), following depends_on entries that name keys of the batch, or "".
func findCycle(reqs []*SubmitRequest, keyIndex map[string]int, start int) string {
	const (
		unseen = iota
		onPath
		done
	)
	mark := make([]int, len(reqs))
	var path []int
	var visit func(i int) []int
	visit = func(i int) []int {
		mark[i] = onPath
		path = append(path, i)
		for _, d := range reqs[i].DependsOn {
			j, ok := keyIndex[d]
			if !ok || reqs[j] == nil {
				continue
			}
			switch mark[j] {
			case onPath:
				from := slices.Index(path, j)
				return append(slices.Clone(path[from:]), j)
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		mark[i] = done
		return nil
	}
	c := visit(start)
	if c == nil {
		return ""
	}
	out := ""
	for n, i := range c {
		if n > 0 {
			out += " → "
		}
		out += fmt.Sprint(i)
	}
	return out
}

// quoteID quotes a client-chosen ID for an error message (visible ASCII,
// checked by validDependencies).
func quoteID(id string) string {
	if len(id) > 64 {
		return fmt.Sprintf("%q…", id[:64])
	}
	return fmt.Sprintf("%q", id)
}
