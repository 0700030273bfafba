package scenarios

import (
	"net/http"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// The request-level and operator scenarios (docs/chaos.md#scenarios): one per
// safety hole a reader found and the chaos suite could not, built on the fault
// classes added for them (late delivery, lost response, an operator deleting
// the lock). Each states the evidence it needs. The hole scenarios (late
// release, deleted blob or container) fail on the code before the fix; the
// lost-answers scenario passed there too (one lease ID per process re-acquired
// its own lease) and guards the fix's design: it fails on an elector that
// takes a fresh lease ID per acquire attempt (a ghost lease).
//
// Hole 3 (the task's context cancelled late, a task started after its
// leadership lapsed) is a matter of microseconds inside one process: it is
// covered by worker/election's unit tests, not by a scenario. Hole 4 (the
// negative control in a production build) by test/cluster's
// TestWorkerBinaries_OnlyTheNegativeControlTakesTheUnsafeFlag, and by
// TestChecker_ReportsS1ForUnsafeLeader still failing its run.
var (
	LateReleaseFromEndedLeadership = Scenario{Name: "LateReleaseFromEndedLeadership", Workers: 2, Run: lateRelease,
		Requires: checker.Requirements{LeadershipsBeforeFault: 1, HitLeader: []string{checker.FaultLateDelivery}, LeadershipsAfterFault: 1}}
	LockBlobDeleted = Scenario{Name: "LockBlobDeleted", Workers: 2, Run: lockDeleted(func() chaos.Fault { return &chaos.DeleteBlob{} }),
		Requires: hitAndFailover(checker.FaultDeleteBlob)}
	LockContainerDeleted = Scenario{Name: "LockContainerDeleted", Workers: 2, Run: lockDeleted(func() chaos.Fault { return &chaos.DeleteContainer{} }),
		Requires: hitAndFailover(checker.FaultDeleteContainer)}
	LostAnswersOnAcquireAndTermWrite = Scenario{Name: "LostAnswersOnAcquireAndTermWrite", Workers: 2, Run: lostAnswers,
		Requires: hitAndFailover(checker.FaultGraceful)}
)

// Hole 1. The leader's renews hang (each is held past the request timeout
// and delivered later, so storage keeps its lease renewed while it cannot
// know), so it steps down at its deadline and sends a release, which is held
// in flight past the moment it could win the lease again. The release then
// lands. Before the fix the lease ID was the same for every leadership of a
// process: the process re-acquired, stamped a new term, and the old release
// freed the *new* lease, so the other worker took over while the re-elected
// one still believed it led (S1). With a lease ID per leadership the late
// release can only free the lease of the leadership that sent it.
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
	c.WaitLeader(t, takeover(p))
}

// Hole 2. An operator deletes the lock blob (breaking its lease first, as
// the tools make one) or the whole container under a running cluster. The
// holder must learn at its next renew (404 is a definite loss: the
// forced-break rule), and whoever leads next must get a term above every
// term used before (a recreated, empty record must not hand out term 1
// again). Before the fix the 404 was transient (the holder kept believing
// until its deadline) and the next leader restarted the terms (S2).
func lockDeleted(fault func() chaos.Fault) func(t *testing.T, c cluster.Cluster) {
	return func(t *testing.T, c cluster.Cluster) {
		p := c.Params()
		old := leading(t, c)
		was, err := old.Status(ctxFor(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		f := fault()
		inject(t, c, f, nil)
		leftTerm(t, old, was.Term, p.RenewInterval+p.RequestTimeout()+slack)
		next := c.WaitLeader(t, p.RenewInterval+p.RequestTimeout()+p.RetryPeriod*11/10+slack)
		st, err := next.Status(ctxFor(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if st.Term <= was.Term {
			t.Errorf("after %s the new leader %s leads term %d, not above the deleted record's term %d: terms went back", f.Kind(), next.Identity(), st.Term, was.Term)
		}
		t.Logf("after %s: %s term %d → %s term %d", f.Kind(), old.Identity(), was.Term, next.Identity(), st.Term)
		remove(t, c, f)
	}
}

// leftTerm waits until w no longer leads term (it may lead a newer one).
func leftTerm(t *testing.T, w cluster.Worker, term int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := w.Status(ctxFor(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if st.Role != "leader" || st.Term != term {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still leads term %d %v after the lock was deleted", w.Identity(), term, timeout)
		}
		hold(t, 50*time.Millisecond)
	}
}

// Lost responses. The leader stops gracefully; the only other worker's
// acquire is granted by storage but its answer is dropped, and then its term
// write lands but its answer is dropped too. It cannot know either outcome:
// it must neither lead on a term it did not see written nor leave a ghost
// lease that blocks everyone for L. The checker allows one more poll per lost
// answer on top of the graceful bound (P·1.1 + ε from the release), far
// below L.
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
	c.WaitLeader(t, takeover(p), old.Identity())
	remove(t, c, stop)
	c.WaitLeader(t, slack)
}
