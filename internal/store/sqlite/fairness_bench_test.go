package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/docket-dev/docket/dockettype"
	"github.com/docket-dev/docket/internal/store"
)

// jain is Jain's fairness index of xs: 1 when all equal, 1/n when one takes
// everything.
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// BenchmarkFairness simulates three tenants submitting at 100:10:1 tasks per
// 100 ms tick to a saturated pool that claims `serve` tasks per tick, on the
// real store, and reports, per simulated 10 s window, each tenant's share of
// the claims and Jain's index over the tenants that stayed backlogged
// through the window (max-min fairness: tenants asking for less than an
// equal share get all they ask; the backlogged ones split the rest equally).
func BenchmarkFairness(b *testing.B) {
	rates := map[string]int{"a": 100, "b": 10, "c": 1}
	tenants := []string{"a", "b", "c"}
	for _, serve := range []int{2, 12, 30} {
		b.Run(fmt.Sprintf("serve=%d_per_tick", serve), func(b *testing.B) {
			for iter := 0; iter < b.N; iter++ {
				s := open(b)
				ctx := context.Background()
				now := benchNow
				const ticks, window = 300, 100 // 100 ms ticks: 30 s in 10 s windows
				claims := map[string]int{}
				backlogged := map[string]bool{"a": true, "b": true, "c": true}
				queued := map[string]int{}
				minJain := 1.0
				for tick := 1; tick <= ticks; tick++ {
					var items []*store.AdmitItem
					for _, tn := range tenants {
						for i := 0; i < rates[tn]; i++ {
							items = append(items, &store.AdmitItem{
								TaskID: uuid.Must(uuid.NewV7()).String(), Tenant: tn, Author: tn, IdempotencyKey: uuid.NewString(),
								RequestHash: "h", Workflow: "demo.echo", Pool: dockettype.PoolOnline, MaxAttempts: 1,
								DeadlineAt: now.Add(time.Hour), TraceID: "t", Input: []byte("{}"),
							})
						}
						queued[tn] += rates[tn]
					}
					if _, err := s.Admit(ctx, &store.AdmitParams{Now: now, Items: items}); err != nil {
						b.Fatal(err)
					}
					claimed, err := s.Claim(ctx, &store.ClaimParams{Now: now, Queue: store.PoolQueue(dockettype.PoolOnline), Owner: "n", Limit: serve, LeaseTTL: time.Hour})
					if err != nil {
						b.Fatal(err)
					}
					for _, c := range claimed {
						claims[c.Task.Tenant]++
						queued[c.Task.Tenant]--
					}
					for _, tn := range tenants {
						if queued[tn] == 0 {
							backlogged[tn] = false
						}
					}
					now = now.Add(100 * time.Millisecond)
					if tick%window != 0 {
						continue
					}
					var xs []float64
					var names string
					for _, tn := range tenants {
						if backlogged[tn] {
							xs = append(xs, float64(claims[tn]))
							names += tn
						}
					}
					j := jain(xs)
					minJain = min(minJain, j)
					total := float64(claims["a"] + claims["b"] + claims["c"])
					if iter == 0 {
						b.Logf("serve %d/tick, window %d: shares a=%.3f b=%.3f c=%.3f; backlogged %q; Jain over backlogged = %.4f",
							serve, tick/window, float64(claims["a"])/total, float64(claims["b"])/total, float64(claims["c"])/total, names, j)
					}
					claims = map[string]int{}
					backlogged = map[string]bool{"a": true, "b": true, "c": true}
				}
				b.ReportMetric(minJain, "min_jain")
				s.Close()
			}
		})
	}
}
