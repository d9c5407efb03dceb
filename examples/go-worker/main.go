// A remote worker in Go: DOCKET_URL=http://127.0.0.1:8080 DOCKET_WORKER_KEY=dk_… go run ./examples/go-worker
package main

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/docket-dev/docket/worker"
)

func main() {
	w := worker.New(os.Getenv("DOCKET_URL"), os.Getenv("DOCKET_WORKER_KEY"), worker.Options{Slots: 8})
	w.Handle("go.hello", func(ctx context.Context, t *worker.Task) (any, error) {
		var in struct{ Name string }
		if err := json.Unmarshal(t.Input, &in); err != nil || in.Name == "" {
			return nil, worker.Fail("invalid_input", `input needs a "name"`, false)
		}
		return map[string]string{"greeting": "hello, " + in.Name}, ctx.Err() // ctx ends on cancel, timeout, lost lease
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil { // until Ctrl-C or SIGTERM: then a graceful shutdown
		log.Fatal(err)
	}
}
