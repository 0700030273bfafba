package election

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
)

// One transient failure of a release (a timeout under load, a 503) must not
// cost the fleet a whole lease duration: the releasing elector tries again
// with the same lease ID (safe: storage refuses it for any other lease), so a
// follower takes over within a poll of the stop, not after the lease expires.
func TestElector_ReleaseRetriedAfterATransientFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		a := start(t, store, testConfig("a"), Callbacks{})
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !a.e.IsLeader() {
			t.Fatal("a does not lead")
		}
		b := start(t, store, testConfig("b"), Callbacks{})
		var failed atomic.Int32
		a.lock.SetFault(func(ctx context.Context, op string) error {
			if op == "release" && failed.Add(1) == 1 {
				return errTransient
			}
			return nil
		})
		time.Sleep(3 * time.Second) // a few renews
		stopped := time.Now()
		a.cancel()
		<-a.exited
		for !b.e.IsLeader() {
			if time.Since(stopped) > 5*time.Second {
				t.Fatalf("b still does not lead %v after a stopped with one failed release: the lease was left to expire (L = %v)", time.Since(stopped), a.e.cfg.LeaseDuration)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := failed.Load(); n < 2 {
			t.Fatalf("%d release calls, want the failed one retried", n)
		}
	})
}
