package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobleader/blobleader/worker/election/bloblock"
	"github.com/blobleader/blobleader/worker/mutex"
)

// One worker takes the lock on a customer's account, another finds it held,
// and takes it with a higher term once the first unlocks.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := bloblock.NewContainerClient(bloblock.ClientConfig{
		ConnectionString: server.ConnectionString(), Container: "example-locks",
		RequestTimeout: 2 * time.Second,
	})
	w1, _ := mutex.New(c, mutex.DefaultConfig("worker-1"))
	w2, _ := mutex.New(c, mutex.DefaultConfig("worker-2"))

	held, err := w1.Lock(ctx, "customer-42")
	if err != nil {
		fmt.Println("lock:", err)
		return
	}
	_, err = w2.TryLock(ctx, "customer-42")
	var locked *mutex.LockedError
	if errors.As(err, &locked) {
		fmt.Println("worker-2: locked by", locked.Holder, "at the same term:", locked.Term == held.Term())
	}

	// Work under the lock: pass held.Term() to every side effect; the
	// context ends the moment the holding does.
	work, stop := held.Context(ctx)
	_ = work
	stop()
	first := held.Term()
	fmt.Println("unlock:", held.Unlock(ctx))

	next, err := w2.Lock(ctx, "customer-42")
	if err != nil {
		fmt.Println("lock:", err)
		return
	}
	defer next.Unlock(ctx)
	fmt.Println("worker-2 holds it with a higher term:", next.Term() > first)
	// Output:
	// worker-2: locked by worker-1 at the same term: true
	// unlock: <nil>
	// worker-2 holds it with a higher term: true
}
