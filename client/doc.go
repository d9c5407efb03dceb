// Package client is the Go client of Docket's HTTP API (v1).
//
// A Client submits tasks, reads them, waits for them to finish, lists,
// cancels them and reads their history and evidence. Tasks are
// dockettype.Task values. An answer with an error status is a *Error whose
// Code is one of Docket's stable error codes; IsCode tests for one.
//
//	c := client.New("http://127.0.0.1:8080", os.Getenv("DOCKET_API_KEY"))
//	res, err := c.Submit(ctx, &client.SubmitParams{
//		IdempotencyKey: "order-42",
//		Workflow:       "demo.echo",
//		Input:          json.RawMessage(`{"hello":"world"}`),
//	})
//	switch {
//	case client.IsCode(err, dockettype.CodeQueueFull):
//		var e *client.Error
//		errors.As(err, &e)
//		<-time.After(e.RetryAfter) // back off, then submit again with the same key
//	case err != nil:
//		return err
//	}
//	task, err := c.Wait(ctx, res.Task.ID, 30*time.Second)
//	if err != nil {
//		return err
//	}
//	fmt.Println(task.State, string(task.Result))
//
// Submitting again with the same IdempotencyKey and the same parameters
// returns the same task (SubmitResult.Replayed is true), so a submission can
// be retried safely after a timeout or a 429/503 answer.
//
// SubmitBatch submits up to MaxBatchItems tasks in one request and answers
// per task (BatchResult.Status is what a single Submit would have
// answered); it is how a large backlog is loaded quickly.
//
// Long polls hold a request for up to a minute: an http.Client given with
// WithHTTPClient should have no Timeout shorter than that; use contexts to
// bound calls instead.
package client
