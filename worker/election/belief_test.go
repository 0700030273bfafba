package election

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/blobleader/blobleader/worker/election/electiontest"
)

// With early takeover on, a follower judges the leader by its record alone:
// a renew that succeeded while the heartbeat after it did not land is
// invisible to it. So belief must rest on the heartbeat too — leadership
// lasts until D after the send of the last renew *and* of the last
// heartbeat that landed, whichever is earlier
// (docs/failover.md#early-takeover). A leader whose heartbeat writes fail
// (transiently) while its renews succeed steps down D after its last
// landed heartbeat, not never.
func TestTakeover_RenewWithoutALandedHeartbeatDoesNotExtendBelief(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := electiontest.NewStore()
		cfg := fastConfig("a")
		a := start(t, store, cfg, Callbacks{})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		oneLeader(t, a)
		a.lock.SetFault(fail(errors.New("503 ServerBusy"), "update")) // heartbeats fail, renews succeed
		failed := time.Now()
		time.Sleep(3 * cfg.RenewDeadline)
		synctest.Wait()
		last := lastBeat(t, a)
		stops := a.rec.all(EventStoppedLeading)
		if len(stops) == 0 {
			t.Fatalf("a leader whose heartbeats all failed for %v (renews succeeding) still leads: its belief outlives what followers can see", 3*cfg.RenewDeadline)
		}
		// The last landed heartbeat was written after a renew sent at its
		// ValidUntil − D; belief ends D after that send at the latest.
		if end := last.ValidUntil; stops[0].Time.After(end.Add(time.Millisecond)) {
			t.Fatalf("stepped down at %s, after the end of belief counted from the last landed heartbeat (%s); failures began %s",
				stops[0].Time.Format(time.StampMilli), end.Format(time.StampMilli), failed.Format(time.StampMilli))
		}
	})
}
