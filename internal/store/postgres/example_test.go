package postgres_test

import (
	"context"
	"fmt"
	"time"

	"github.com/docket-dev/docket/internal/store"
	"github.com/docket-dev/docket/internal/store/postgres"
)

// Open a store in its own schema and give a scheduler its own connection
// budget with Fork.
func ExampleOpen() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, "postgres://docket@127.0.0.1:5432/docket?sslmode=disable", postgres.Options{
		MaxConns: 16,
		Schema:   "docket",
	})
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer s.Close()

	recovery, err := s.Fork("recovery", store.ForkOptions{MaxConns: 2})
	if err != nil {
		fmt.Println("fork:", err)
		return
	}
	defer recovery.Close()
	expired, err := recovery.FindExpiredLeases(ctx, &store.FindExpiredLeasesParams{Now: time.Now(), Limit: 100})
	fmt.Println(len(expired), err)
}
