package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// The election's scenarios (docs/chaos.md#scenarios). Each waits on the
// effects it expects with deadlines a little looser than the bounds of
// docs/failover.md#liveness-how-long-until-a-new-leader; the checker then
// judges the exact bounds from the history.
var (
	LeaderKilled               = Scenario{Name: "LeaderKilled", Workers: 3, Run: leaderKilled, Requires: hitAndFailover(checker.FaultCrash)}
	LeaderStoppedGracefully    = Scenario{Name: "LeaderStoppedGracefully", Workers: 3, Run: leaderStopped, Requires: hitAndFailover(checker.FaultGraceful)}
	PausedLeaderStepsDown      = Scenario{Name: "PausedLeaderStepsDown", Workers: 3, Run: pausedLeader, Requires: hitAndFailover(checker.FaultPause)}
	PartitionedLeaderStepsDown = Scenario{Name: "PartitionedLeaderStepsDown", Workers: 3, Run: partitionedLeader, Requires: hitAndFailover(checker.FaultPartition)}
	LatencyBelowRequestTimeout = Scenario{Name: "LatencyBelowRequestTimeout", Workers: 3, Run: latencyBelow, Requires: hit(checker.FaultLatency)}
	LatencyAboveRequestTimeout = Scenario{Name: "LatencyAboveRequestTimeout", Workers: 3, Run: latencyAbove, Requires: hitAndFailover(checker.FaultLatency)}
	RandomResetsOnAllWorkers   = Scenario{Name: "RandomResetsOnAllWorkers", Workers: 3, Run: randomResets, Requires: hit(checker.FaultReset)}
	StorageOutage              = Scenario{Name: "StorageOutage", Workers: 3, Run: storageOutage, Requires: hitAndFailover(checker.FaultOutage)}
	OperatorBreaksLease        = Scenario{Name: "OperatorBreaksLease", Workers: 3, Run: operatorBreak, Requires: hitAndFailover(checker.FaultBreak)}
	RollingRestart             = Scenario{Name: "RollingRestart", Workers: 3, Run: rollingRestart, Requires: hitAndFailover(checker.FaultGraceful)}
)

// hit is the minimum evidence of a scenario whose fault must reach a
// working leader: a leadership before it, and a fault of that kind that hit
// the leader of the moment.
func hit(kind string) checker.Requirements {
	return checker.Requirements{LeadershipsBeforeFault: 1, HitLeader: []string{kind}}
}

// hitAndFailover adds one measured failover to hit.
func hitAndFailover(kind string) checker.Requirements {
	r := hit(kind)
	r.Failovers = 1
	return r
}

// slack is added to every wait on top of the failover bound: the waits only
// keep a broken run from hanging; the checker measures the bound itself.
const slack = 5 * time.Second

// takeover is the crash bound L + P·1.1 + ε, plus slack.
func takeover(p cluster.Params) time.Duration {
	return p.LeaseDuration + p.RetryPeriod*11/10 + time.Second + slack
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// observeTimeout bounds one of the harness's own reads whose failure ends
// the test (a worker's /status, /metrics or /healthz, a blob's properties):
// an observer's call, which no design rule bounds, so a machine that stalls
// slows the check down rather than ending it (issue 36: a 5 s read of /status
// timed out under a load of 3× the cores). Reads polled until a condition
// holds keep a short timeout: the poll's own deadline is their bound.
const observeTimeout = 30 * time.Second

// observe is a context for one such read.
func observe(t *testing.T) context.Context {
	t.Helper()
	return ctxFor(t, observeTimeout)
}

func inject(t *testing.T, c cluster.Cluster, f chaos.Fault, w cluster.Worker) {
	t.Helper()
	if err := c.Inject(ctxFor(t, time.Minute), f, w); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, c cluster.Cluster, f chaos.Fault) {
	t.Helper()
	if err := c.Remove(ctxFor(t, time.Minute), f); err != nil {
		t.Fatal(err)
	}
}

// waitNotLeader polls w until it no longer claims leadership, and fails t if
// it still does after timeout. It returns when it stopped claiming.
func waitNotLeader(t *testing.T, w cluster.Worker, timeout time.Duration) time.Time {
	t.Helper()
	ctx := ctxFor(t, timeout)
	var last cluster.Status
	var lastErr error
	for {
		st, err := w.Status(ctx)
		if err == nil && st.Role != "leader" {
			return time.Now()
		}
		last, lastErr = st, err
		select {
		case <-ctx.Done():
			t.Fatalf("%s still claims leadership after %v (status %+v, err %v)", w.Identity(), timeout, last, lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leading waits for one leader and then until the ledger has grown by a few
// entries, so the fault hits a leader that is doing its work (renewing and
// appending), not one that has just been elected.
func leading(t *testing.T, c cluster.Cluster) cluster.Worker {
	t.Helper()
	p := c.Params()
	w := waitLeader(t, c, takeover(p))
	// A wait (D + slack plus the stall measured meanwhile), of reads that
	// are the harness's own: each may take an observer's time.
	wt := waitOn(c, p.RenewDeadline+slack)
	start := -1
	for {
		es, err := ReadLedger(observe(t), c.Storage(), c.LockBlob())
		if err == nil {
			if start < 0 {
				start = len(es)
			} else if len(es) >= start+3 {
				break
			}
		}
		if wt.over() {
			wt.fatal(t, "the ledger did not grow by 3 entries under leader %s within %v (read error: %v)", w.Identity(), wt, err)
		}
		hold(t, 100*time.Millisecond)
	}
	return waitLeader(t, c, takeover(p))
}

// hold lets d pass: how long a fault stays in place is the scenario's input,
// not a synchronisation (every wait for an effect polls with a deadline).
func hold(_ *testing.T, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
}

// holdUntil lets time pass until at (at once if at has passed): the length
// of a fault measured from when it was put in place.
func holdUntil(t *testing.T, at time.Time) {
	if d := time.Until(at); d > 0 {
		hold(t, d)
	}
}

// hitLeader waits for a working leader (see leading), puts f on it and
// returns that leader with the moment the fault was in place.
func hitLeader(t *testing.T, c cluster.Cluster, f chaos.Fault) (cluster.Worker, time.Time) {
	t.Helper()
	old := leading(t, c)
	inject(t, c, f, old)
	return old, time.Now()
}

// crashLeader SIGKILLs a working leader, waits up to bound for another
// worker to lead and returns how long that took after the kill. The killed
// slot comes back as a new incarnation, a follower, under exactly one leader.
func crashLeader(t *testing.T, c cluster.Cluster, bound time.Duration) time.Duration {
	t.Helper()
	crash := &chaos.Crash{Restart: true}
	old, killed := hitLeader(t, c, crash)
	waitLeader(t, c, bound, old.Identity())
	took := time.Since(killed)
	remove(t, c, crash)
	c.Leader(t)
	return took
}

// resumedNotLeader removes the freeze f from old, whose deadline passed
// while it was frozen, and checks that at once there is exactly one leader
// and it is not old, and that old stops claiming within a second. after
// names the freeze in the failure.
func resumedNotLeader(t *testing.T, c cluster.Cluster, f chaos.Fault, old cluster.Worker, after string) {
	t.Helper()
	remove(t, c, f)
	if got := c.Leader(t); got.Identity() == old.Identity() {
		t.Fatalf("the resumed worker %s claims leadership after %s", old.Identity(), after)
	}
	waitNotLeader(t, old, time.Second)
}

// 1. Leader crash: SIGKILL, no release; a follower takes over once the lease
// expires, within L + P·1.1 + ε of the last renew.
func leaderKilled(t *testing.T, c cluster.Cluster) {
	crashLeader(t, c, takeover(c.Params()))
}

// 2. Graceful stop: SIGTERM; the leader releases the lease and a follower
// takes over within P·1.1 + ε of the release.
func leaderStopped(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	stop := &chaos.Stop{Restart: true, Grace: (p.ShutdownGrace + 10*time.Second).Milliseconds()}
	old, _ := hitLeader(t, c, stop)
	waitLeader(t, c, p.RetryPeriod*11/10+time.Second+slack, old.Identity())
	remove(t, c, stop)
	c.Leader(t)
}

// 3. Pause longer than L: the frozen leader's lease expires and a follower
// takes over; on SIGCONT the old leader must not claim leadership at all (its
// role is computed against its deadline, which has passed).
func pausedLeader(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	pause := &chaos.Pause{}
	old, paused := hitLeader(t, c, pause)
	waitLeader(t, c, takeover(p), old.Identity())
	holdUntil(t, paused.Add(p.LeaseDuration+time.Second)) // paused longer than L, as the scenario demands
	resumedNotLeader(t, c, pause, old, "a pause longer than L")
}

// 4. Partition the leader from storage: it steps down by its renew deadline
// (while its HTTP endpoint still answers), a follower takes over after the
// lease expires; after healing there is still exactly one leader.
func partitionedLeader(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	part := &chaos.Partition{}
	old, _ := hitLeader(t, c, part)
	// Its last renew was sent at most RenewInterval before the cut (plus the
	// request timeout of one in flight), so it must step down by D after.
	waitNotLeader(t, old, p.RenewDeadline+time.Second)
	waitLeader(t, c, takeover(p), old.Identity())
	remove(t, c, part)
	waitLeader(t, c, slack)
}

// 5a. Latency just below the per-request timeout on the leader's link (a
// round trip of 3/4 of it): renews are slow but succeed, so the leader keeps
// its term throughout.
func latencyBelow(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	old := leading(t, c)
	before, err := old.Status(observe(t))
	if err != nil {
		t.Fatal(err)
	}
	oneWay := p.RequestTimeout() * 3 / 8 // round trip 3/4 of the timeout
	lat := &chaos.Latency{Latency: oneWay.Milliseconds(), Stream: chaos.Both}
	inject(t, c, lat, old)
	injected := time.Now()
	// Long enough for several renews and for a deadline to pass if they failed.
	deadline := time.Now().Add(p.RenewDeadline + 2*p.RenewInterval)
	for time.Now().Before(deadline) {
		st, err := old.Status(observe(t))
		if err != nil {
			t.Fatal(err)
		}
		if st.Role != "leader" || st.Term != before.Term {
			// The latency leaves a renew a quarter of its timeout: a stall
			// of that much can push it past, which proves nothing.
			starved(t, c, fmt.Sprintf("under %v one-way latency (< request timeout %v) %s lost its term %d: %+v", oneWay, p.RequestTimeout(), old.Identity(), before.Term, st),
				injected, time.Now(), p.RequestTimeout()/4)
		}
		hold(t, 250*time.Millisecond) // sampling interval of the check above
	}
	remove(t, c, lat)
	if got := c.Leader(t); got.Identity() != old.Identity() {
		t.Fatalf("leadership moved from %s to %s under latency below the timeout", old.Identity(), got.Identity())
	}
}

// 5b. Latency above the per-request timeout on the leader's link (a round
// trip of 1.5 of it): every renew times out, so the leader must step down by
// its deadline. The requests still reach storage (they are only slow), so
// whether a follower can take over during the fault depends on the lease
// staying renewed at storage; the checker's L1 applies from the heal.
func latencyAbove(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	old := leading(t, c)
	oneWay := p.RequestTimeout() * 3 / 4 // round trip 1.5 × the timeout
	lat := &chaos.Latency{Latency: oneWay.Milliseconds(), Stream: chaos.Both}
	began := time.Now()
	inject(t, c, lat, old)
	stepped := waitNotLeader(t, old, p.RenewDeadline+p.RequestTimeout()+time.Second)
	t.Logf("%s stepped down %v after the latency began", old.Identity(), stepped.Sub(began).Round(time.Millisecond))
	// Keep the latency until a lease would certainly have expired.
	hold(t, p.LeaseDuration+p.RetryPeriod*2)
	remove(t, c, lat)
	waitLeader(t, c, takeover(p))
}

// 5c. Random drops and resets on every worker's link for two renew
// deadlines: a share of connections is reset, another black-holed. The
// toxics are rerolled every renew interval so they keep hitting the
// connections the workers hold on to (see chaos.Rerollable).
func randomResets(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	waitLeader(t, c, takeover(p))
	var faults []chaos.Rerollable
	for _, w := range c.Workers() {
		reset := &chaos.Reset{Toxicity: 0.3, Stream: chaos.Both}
		drop := &chaos.Timeout{Timeout: p.RequestTimeout().Milliseconds() / 2, Stream: chaos.Both, Toxicity: 0.15}
		inject(t, c, reset, w)
		inject(t, c, drop, w)
		faults = append(faults, reset, drop)
	}
	reroll(t, faults, 2*p.RenewDeadline, p.RenewInterval)
	if err := c.Heal(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, c, takeover(p))
}

// reroll holds the faults for d, rerolling them every period.
func reroll(t *testing.T, faults []chaos.Rerollable, d, period time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= period {
			hold(t, max(left, 0))
			return
		}
		hold(t, period)
		for _, f := range faults {
			if err := f.Reroll(ctxFor(t, time.Minute)); err != nil {
				t.Errorf("reroll %s on %s: %v", f.Kind(), f.Target(), err)
			}
		}
	}
}

// 5d. Storage down for everyone for 30 s (longer than L): every leader steps
// down by its deadline; after the outage one leader is elected again.
func storageOutage(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	old := leading(t, c)
	out := &chaos.Outage{}
	inject(t, c, out, nil)
	waitNotLeader(t, old, p.RenewDeadline+time.Second)
	hold(t, 30*time.Second-p.RenewDeadline)
	remove(t, c, out)
	waitLeader(t, c, takeover(p))
}

// 5e. An operator breaks the lease (BreakLease(0)): the lease is free at
// once, the holder learns at its next renew and steps down within one renew
// interval plus the request timeout; the forced-break rule replaces S1.
func operatorBreak(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	old := leading(t, c)
	was, err := old.Status(observe(t))
	if err != nil {
		t.Fatal(err)
	}
	brk := &chaos.BreakLease{}
	inject(t, c, brk, nil)
	// The old holder leaves its term (it may win a new one afterwards).
	wt := waitOn(c, p.RenewInterval+p.RequestTimeout()+slack)
	for {
		st, err := old.Status(observe(t))
		if err != nil {
			t.Fatal(err)
		}
		if st.Role != "leader" || st.Term != was.Term {
			break
		}
		if wt.over() {
			wt.fatal(t, "%s still leads its old term %d %v after the break", old.Identity(), st.Term, p.RenewInterval+p.RequestTimeout()+slack)
		}
		hold(t, 50*time.Millisecond)
	}
	waitLeader(t, c, p.RenewInterval+p.RequestTimeout()+p.RetryPeriod*11/10+slack)
}

// 5f. Rolling restart: each worker in turn is stopped gracefully and
// started again; there is a leader after each step.
func rollingRestart(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	waitLeader(t, c, takeover(p))
	for _, w := range c.Workers() {
		waitEveryoneSawALeader(t, c, takeover(p))
		id := w.Identity()
		stop := &chaos.Stop{Restart: true, Grace: (p.ShutdownGrace + 10*time.Second).Milliseconds()}
		inject(t, c, stop, w)
		waitLeader(t, c, p.RetryPeriod*11/10+time.Second+slack, id)
		remove(t, c, stop)
		waitLeader(t, c, slack)
	}
}

// waitEveryoneSawALeader waits until every running worker's /status names a
// leader: each has finished a poll, so each has written history. A worker
// stopped before its first poll would leave no history at all, which the
// checker rightly counts as missing evidence (seen in the soak: a rolling
// restart stopped a worker 0.12 s after it started).
func waitEveryoneSawALeader(t *testing.T, c cluster.Cluster, timeout time.Duration) {
	t.Helper()
	if waiting := awaitEveryoneSawALeader(c, timeout); len(waiting) > 0 {
		t.Fatalf("after %v these workers still name no leader in /status: %v", timeout, waiting)
	}
}

// awaitEveryoneSawALeader polls every running worker's /status until each
// names a leader (so each has finished a poll and written history) or
// timeout passes; it returns the workers still waiting.
func awaitEveryoneSawALeader(c cluster.Cluster, timeout time.Duration) []string {
	wt := waitOn(c, timeout)
	var waiting []string
	for {
		waiting = waiting[:0]
		for _, w := range c.Workers() {
			if !w.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := w.Status(ctx)
			cancel()
			if err != nil || st.Leader == "" {
				waiting = append(waiting, w.Identity())
			}
		}
		if len(waiting) == 0 || wt.over() {
			return waiting
		}
		time.Sleep(100 * time.Millisecond) // polling /status; there is no event to await across processes
	}
}
