package bloblock_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/bloblock"
)

// A lock on one blob, and the election on it. This example runs against the
// Azurite that the package's tests start; in production the client is built
// from an AccountURL (keyless, DefaultAzureCredential) instead.
func ExampleNew() {
	c, err := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(), // e.g. "UseDevelopmentStorage=true" for a local Azurite
		Container:        "example-leases",
		RequestTimeout:   2 * time.Second, // what the elector uses: min(RenewInterval, RenewDeadline/3)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	lock, err := bloblock.New(c, "leader")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := election.DefaultConfig("example-worker")
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))

	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	err = election.RunTaskWhenLeader(ctx, cfg, lock, func(ctx context.Context, term int64) error {
		// The term is the fencing token: pass it to every side effect.
		fmt.Println("leading; term above zero:", term > 0)
		stop()
		<-ctx.Done()
		return nil
	})
	fmt.Println("stopped:", err)
	// The stop released the lease: the record says who led last.
	rec, err := lock.Get(context.Background())
	fmt.Println("last holder:", rec.Holder, err)
	// Output:
	// leading; term above zero: true
	// stopped: <nil>
	// last holder: example-worker <nil>
}
