package scenarios

import (
	"net/http"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// Request-level faults (docs/chaos.md#scenarios): a request delivered after
// its client gave up on it, an answer storage sent and the client never
// got. Each scenario states the evidence it needs.
var (
	// LateReleaseFromEndedLeadership: the leader's renews are held past the
	// request timeout (each still lands, so storage keeps its lease renewed
	// while it cannot know), so it steps down at its deadline; its release
	// is held in flight past the moment the same process could win the lease
	// again, then lands. A release frees only the lease of the leadership
	// that sent it (a lease ID per leadership): never a later leadership's,
	// so no two leaders overlap (S1).
	LateReleaseFromEndedLeadership = Scenario{Name: "LateReleaseFromEndedLeadership", Workers: 2, Run: lateRelease,
		Requires: checker.Requirements{LeadershipsBeforeFault: 1, HitLeader: []string{checker.FaultLateDelivery}, LeadershipsAfterFault: 1}}
	// LostAnswersOnAcquireAndTermWrite: the leader stops gracefully; the
	// only other worker's acquire is granted by storage but its answer
	// dropped, and then its term write lands but its answer is dropped too.
	// It cannot know either outcome: it must neither lead on a term it did
	// not see written nor leave a ghost lease that blocks everyone for L.
	// The checker allows one more poll per lost answer on top of the
	// graceful bound (P·1.1 + ε from the release), far below L.
	LostAnswersOnAcquireAndTermWrite = Scenario{Name: "LostAnswersOnAcquireAndTermWrite", Workers: 2, Run: lostAnswers,
		Requires: hitAndFailover(checker.FaultGraceful)}
)

func lateRelease(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	old := leading(t, c)
	rt := p.RequestTimeout()
	// Held just past the client's timeout: the renew still lands.
	hang := &chaos.LateDelivery{Op: chaos.OpRenew, Delay: (rt + time.Second).Milliseconds()}
	// Held until after the client's timeout, the 2·P pause and a poll:
	// the old process has had its chance to win the lease back.
	releaseDelay := rt + 2*p.RetryPeriod*11/10 + 3*time.Second
	late := &chaos.LateDelivery{Op: chaos.OpRelease, Delay: releaseDelay.Milliseconds(), Count: 1}
	inject(t, c, late, old)
	inject(t, c, hang, old)
	waitNotLeader(t, old, p.RenewDeadline+p.RenewInterval+rt+slack)
	if err := late.AwaitHeld(ctxFor(t, rt+slack), 1); err != nil {
		t.Fatalf("%s stepped down but its release never reached the proxy (the fault missed): %v", old.Identity(), err)
	}
	ds, err := late.AwaitDelivered(ctxFor(t, releaseDelay+slack), 1)
	if err != nil || ds[0].Status == 0 {
		t.Fatalf("the held release was not delivered to storage: %+v, %v", ds, err)
	}
	t.Logf("late release delivered %v after it was sent: HTTP %d %s", ds[0].Sent.Sub(ds[0].Held).Round(time.Millisecond), ds[0].Status, ds[0].Code)
	// Keep the renews hanging while the other worker polls: a re-elected
	// old process would keep believing until its own deadline.
	hold(t, 2*p.RetryPeriod*11/10+time.Second)
	remove(t, c, hang)
	remove(t, c, late)
	waitLeader(t, c, takeover(p))
}

func lostAnswers(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	old := leading(t, c)
	var follower cluster.Worker
	for _, w := range c.Workers() {
		if w.Identity() != old.Identity() && w.Running() {
			follower = w
		}
	}
	if follower == nil {
		t.Fatal("no follower to lose answers")
	}
	acq := &chaos.LostResponse{Op: chaos.OpAcquire, Status: http.StatusCreated, Count: 1}
	term := &chaos.LostResponse{Op: chaos.OpMetadata, Count: 1}
	inject(t, c, acq, follower)
	inject(t, c, term, follower)
	stop := &chaos.Stop{Restart: true, Grace: (p.ShutdownGrace + 10*time.Second).Milliseconds()}
	inject(t, c, stop, old)
	// The acquire's answer is lost at the first poll after the release.
	ds, err := acq.AwaitDropped(ctxFor(t, 2*p.RetryPeriod*11/10+slack), 1)
	if err != nil {
		t.Fatalf("%s: no granted acquire answer dropped (the fault missed): %v", follower.Identity(), err)
	}
	t.Logf("%s: dropped the %s answer (HTTP %d)", follower.Identity(), ds[0].Op, ds[0].Status)
	remove(t, c, acq)
	// The term write comes at the next poll, if the follower can take its
	// own lease back; a ghost lease would hold it off for L. Wait that long,
	// so the checker can measure (and fail) a ghost rather than the wait.
	if ds, err = term.AwaitDropped(ctxFor(t, takeover(p)), 1); err != nil {
		t.Errorf("%s: no term write answer dropped within %v of the lost acquire (a ghost lease, or the fault missed): %v", follower.Identity(), takeover(p), err)
	} else {
		t.Logf("%s: dropped the %s answer (HTTP %d)", follower.Identity(), ds[0].Op, ds[0].Status)
	}
	remove(t, c, term)
	waitLeader(t, c, takeover(p), old.Identity())
	remove(t, c, stop)
	waitLeader(t, c, slack)
}
