package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	"github.com/docket-dev/docket/client"
	"github.com/docket-dev/docket/dockettype"
)

// remoteBench is the end-to-end bench of a running server.
type remoteBench struct {
	n, conc  int
	workflow string
	input    []byte
	pool     string
	timeout  time.Duration
	asJSON   bool
	clock    clockwork.Clock // times the run and the waits after 429
}

// remoteResult is what --url --json prints: one object.
type remoteResult struct {
	Mode                 string                   `json:"mode"` // "url"
	Workflow             string                   `json:"workflow"`
	Tasks                int                      `json:"tasks"` // terminal at the end
	Clients              int                      `json:"clients"`
	Seconds              float64                  `json:"seconds"`          // first submit until every task is terminal
	TasksPerSecond       float64                  `json:"tasks_per_second"` // end to end
	SubmitSeconds        float64                  `json:"submit_seconds"`
	SubmitTasksPerSecond float64                  `json:"submit_tasks_per_second"`
	Latency              string                   `json:"latency"` // "admission_to_finish"
	P50MS                float64                  `json:"p50_ms"`
	P90MS                float64                  `json:"p90_ms"`
	P99MS                float64                  `json:"p99_ms"`
	MaxMS                float64                  `json:"max_ms"`
	States               map[dockettype.State]int `json:"states"`
}

// benchRemote measures end-to-end throughput against a running server: it
// submits n tasks from conc clients and long-polls each until it is
// terminal, then reports submit rate, end-to-end rate and the
// admission→finish latency the server recorded.
func benchRemote(c *client.Client, o remoteBench, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	run := uuid.NewString()[:8]
	jobs := make(chan int)
	ids := make(chan string, o.n)
	var (
		mu        sync.Mutex
		firstErr  error
		submitted int
		tasks     []*dockettype.Task
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}
	start := o.clock.Now()
	var submitters, waiters sync.WaitGroup
	for range o.conc {
		submitters.Add(1)
		go func() {
			defer submitters.Done()
			for i := range jobs {
				res, err := submitWithRetry(ctx, o.clock, c, &client.SubmitParams{
					IdempotencyKey: fmt.Sprintf("bench-%s-%d", run, i), Workflow: o.workflow, Input: json.RawMessage(o.input), Pool: dockettype.Pool(o.pool),
				})
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				submitted++
				mu.Unlock()
				ids <- res.Task.ID
			}
		}()
		waiters.Add(1)
		go func() {
			defer waiters.Done()
			for id := range ids {
				task, err := c.Wait(ctx, id, time.Minute)
				for err == nil && !task.State.Terminal() {
					task, err = c.Wait(ctx, id, time.Minute)
				}
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				tasks = append(tasks, task)
				mu.Unlock()
			}
		}()
	}
	var submitDone time.Duration
feed:
	for i := range o.n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	submitters.Wait()
	submitDone = o.clock.Since(start)
	close(ids)
	waiters.Wait()
	total := o.clock.Since(start)
	if firstErr != nil {
		return firstErr
	}
	states := map[dockettype.State]int{}
	var lat []time.Duration
	for _, t := range tasks {
		states[t.State]++
		if t.FinishedAt != nil {
			lat = append(lat, t.FinishedAt.Sub(t.CreatedAt))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	if o.asJSON {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b, err := json.Marshal(remoteResult{
			Mode: "url", Workflow: o.workflow, Tasks: len(tasks), Clients: o.conc,
			Seconds: total.Seconds(), TasksPerSecond: float64(len(tasks)) / total.Seconds(),
			SubmitSeconds: submitDone.Seconds(), SubmitTasksPerSecond: float64(submitted) / submitDone.Seconds(),
			Latency: "admission_to_finish", P50MS: ms(pct(0.50)), P90MS: ms(pct(0.90)), P99MS: ms(pct(0.99)), MaxMS: ms(pct(1)),
			States: states,
		})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	fmt.Fprintf(stdout, "workflow %s, %s, %s\n", o.workflow, plural(submitted, "task"), plural(o.conc, "client"))
	fmt.Fprintf(stdout, "submit:     %8.0f tasks/s (%s)\n", float64(submitted)/submitDone.Seconds(), submitDone.Round(time.Millisecond))
	fmt.Fprintf(stdout, "end to end: %8.0f tasks/s (%s until all terminal)\n", float64(len(tasks))/total.Seconds(), total.Round(time.Millisecond))
	fmt.Fprintf(stdout, "latency admission→finish: p50 %s  p90 %s  p99 %s  max %s\n", pct(0.50), pct(0.90), pct(0.99), pct(1))
	fmt.Fprintf(stdout, "states: %s\n", formatStates(states))
	return nil
}

// submitWithRetry retries 429 answers after their Retry-After, so a bench
// larger than the pool's capacity measures throughput rather than refusals.
func submitWithRetry(ctx context.Context, clock clockwork.Clock, c *client.Client, p *client.SubmitParams) (*client.SubmitResult, error) {
	for {
		res, err := c.Submit(ctx, p)
		var ce *client.Error
		if errors.As(err, &ce) && ce.StatusCode == 429 {
			wait := max(ce.RetryAfter, 100*time.Millisecond)
			select {
			case <-clock.After(wait):
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return res, err
	}
}
