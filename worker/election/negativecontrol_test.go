//go:build negativecontrol

package election

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
)

// Run with: go test -tags negativecontrol ./worker/election
func TestElector_UnsafeNoStepDownKeepsClaimingAfterLoss(t *testing.T) {
	// The negative control's mechanism: with EnableUnsafeNoStepDown a deposed
	// leader keeps claiming, and publishes no bound on its claim.
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		cfg := testConfig("a")
		EnableUnsafeNoStepDown(&cfg)
		a := start(t, store, cfg, Callbacks{})
		synctest.Wait()
		a.lock.SetFault(hang("renew"))
		b := start(t, store, testConfig("b"), Callbacks{})
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if len(leaders(a, b)) != 2 {
			t.Fatal("the unsafe elector should still claim leadership beside the new leader")
		}
		if st := a.rec.all(EventStartedLeading); len(st) != 1 || !st[0].ValidUntil.IsZero() {
			t.Fatalf("unsafe started_leading = %+v, want no valid_until", st)
		}
	})
}

// The early-break control's mechanism: with EnableUnsafeEarlyBreak a
// follower breaks a frozen leader's lease while that leader still believes
// it leads, so two electors claim leadership at once — what the chaos
// checker must catch (docs/failover.md#early-takeover). The same run with a
// safe follower has one leader at every instant.
func TestElector_UnsafeEarlyBreakTakesOverABelievingLeader(t *testing.T) {
	for _, unsafe := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			store := electiontest.NewStore()
			a := start(t, store, fastConfig("a"), Callbacks{})
			synctest.Wait()
			cfg := fastConfig("b")
			if unsafe {
				EnableUnsafeEarlyBreak(&cfg)
			}
			b := start(t, store, cfg, Callbacks{})
			time.Sleep(2 * time.Second)
			synctest.Wait()
			a.lock.SetFault(hang("renew", "update")) // frozen on storage: it still believes until its deadline
			both := false
			for range 40 {
				time.Sleep(50 * time.Millisecond)
				synctest.Wait()
				both = both || len(leaders(a, b)) == 2
			}
			if both != unsafe {
				t.Fatalf("unsafe %v: two electors claimed leadership at once: %v", unsafe, both)
			}
		})
	}
}
