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
