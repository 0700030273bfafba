package election_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/election/electiontest"
)

// A service that needs "exactly one instance does X" runs its task through
// RunTaskWhenLeader. Here the lock is in memory; in production it is a
// bloblock.Lock on an Azure blob.
func ExampleRunTaskWhenLeader() {
	store := electiontest.NewStore()
	cfg := election.DefaultConfig("worker-1")
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))

	ctx, stop := context.WithCancel(context.Background())
	err := election.RunTaskWhenLeader(ctx, cfg, store.NewLock("worker-1"), func(ctx context.Context, term int64) error {
		// Every side effect carries the term: it is the fencing token.
		fmt.Printf("leading with term %d\n", term)
		stop() // a real task runs until ctx is cancelled
		<-ctx.Done()
		return nil
	})
	fmt.Println("stopped:", err)
	// The lease was released on stop: another contender gets it at once.
	fmt.Println("free for the next:", store.NewLock("worker-2").Acquire(context.Background(), "another-lease-id", cfg.LeaseDuration) == nil)
	// Output:
	// leading with term 1
	// stopped: <nil>
	// free for the next: true
}

// NewElector with Callbacks, for a service that also wants to know who leads
// and to see every election event (for logs, metrics or a history).
func ExampleNewElector() {
	store := electiontest.NewStore() // in production: a bloblock.Lock
	cfg := election.DefaultConfig("worker-1")
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))

	ctx, stop := context.WithCancel(context.Background())
	e, err := election.NewElector(cfg, store.NewLock("worker-1"), election.Callbacks{
		OnStartedLeading: func(ctx context.Context, term int64) error {
			fmt.Println("task runs with term", term)
			stop()
			<-ctx.Done() // cancelled the instant leadership ends
			return nil
		},
		OnStoppedLeading: func(reason string) { fmt.Println("stopped leading:", reason) },
		OnNewLeader:      func(identity string, term int64) { fmt.Println("leader is", identity) },
		OnEvent: func(ev election.Event) {
			if ev.Kind == election.EventReleased {
				fmt.Println("event:", ev.Kind)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run:", e.Run(ctx))
	fmt.Println("role after stop:", e.Status().Role)
	// Output:
	// leader is worker-1
	// task runs with term 1
	// stopped leading: shutdown
	// event: released
	// run: <nil>
	// role after stop: stopping
}
