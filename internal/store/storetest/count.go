package storetest

import (
	"context"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// CountByState counts every task of every tenant by state, reading the
// store through its contract (Stats for the tenants, then ListTasks page
// by page). It reads everything: for tests and small databases only.
func CountByState(ctx context.Context, st interface {
	store.Statter
	store.Reader
}) (map[dockettype.State]int, error) {
	stats, err := st.Stats(ctx)
	if err != nil {
		return nil, err
	}
	out := map[dockettype.State]int{}
	for _, ten := range stats.Tenants {
		after := ""
		for {
			page, err := st.ListTasks(ctx, &store.ListTasksParams{Tenant: ten.ID, Limit: 500, After: after})
			if err != nil {
				return nil, err
			}
			for _, t := range page {
				out[t.State]++
			}
			if len(page) < 500 {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	return out, nil
}
