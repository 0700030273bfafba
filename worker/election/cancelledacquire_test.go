package election

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
	"github.com/blobleader/blobleader/worker/election/lease"
)

// A follower stopped (Run's context cancelled) while its acquire is in
// flight cannot know whether storage granted it: the request may have landed
// and only the answer been cut off. It must release with that lease ID, or a
// granted lease blocks every other contender for a whole lease duration.
func TestElector_CancelledMidAcquireReleasesAMaybeGrantedLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		c := start(t, store, testConfig("a"), Callbacks{})
		side := store.NewLock("storage") // applies the request at storage
		inFlight := make(chan struct{})
		c.lock.SetFault(func(ctx context.Context, op string) error {
			if op != "acquire" {
				return nil
			}
			// Storage grants the lease; the answer never comes back.
			if err := side.Acquire(context.Background(), c.lock.LastLeaseID("acquire"), 15*time.Second); err != nil {
				return err
			}
			close(inFlight)
			<-ctx.Done()
			return ctx.Err()
		})
		<-inFlight
		c.cancel()
		<-c.exited
		other := store.NewLock("b")
		if err := other.Acquire(context.Background(), newLeaseID(), 15*time.Second); errors.Is(err, lease.ErrHeld) {
			t.Fatalf("after a follower was stopped mid-acquire the lease is still held: its granted lease blocks everyone for L (%v)", err)
		} else if err != nil {
			t.Fatal(err)
		}
	})
}
