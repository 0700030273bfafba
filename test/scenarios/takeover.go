package scenarios

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// Early takeover's scenarios (docs/failover.md#early-takeover), on the fast
// profile (cluster.FastParams: D 1.5 s, renew 0.5 s, P 0.5 s, T 2.25 s).
var (
	HostLossFast = Scenario{Name: "HostLossFast", Workers: 3, Run: hostLossFast,
		Requires: withBreaks(hitAndFailover(checker.FaultCrash))}
	FrozenLeaderPastT = Scenario{Name: "FrozenLeaderPastT", Workers: 3, Run: frozenLeaderPastT,
		Requires: withBreaks(hitAndFailover(checker.FaultPause))}
	SlowStorageAndPausedFollower = Scenario{Name: "SlowStorageAndPausedFollower", Workers: 3, Run: slowStorageAndPausedFollower,
		Requires: hit(checker.FaultLatency)}
	OperatorBreakFast = Scenario{Name: "OperatorBreakFast", Workers: 3, Run: operatorBreakFast,
		Requires: hitAndFailover(checker.FaultBreak)}
	LateBreakFast = Scenario{Name: "LateBreakFast", Workers: 3, Run: lateBreakFast,
		Requires: withBreaks(hitAndFailover(checker.FaultCrash))}
)

// EnvTakeoverOff starts the fast-profile workers with early takeover
// switched off while the checker still expects it: the control that shows
// the scenarios fail without the mechanism.
const EnvTakeoverOff = "BLOBLEADER_CHAOS_TAKEOVER_OFF"

// Fast is the local backend on the fast profile (or, with
// $BLOBLEADER_CHAOS_TAKEOVER_OFF=1, its workers without early takeover).
func Fast(t *testing.T, n int, opts ...cluster.Option) cluster.Cluster {
	t.Helper()
	if os.Getenv(EnvTakeoverOff) == "1" {
		opts = append(opts, cluster.Args("--takeover-after=0"))
		t.Logf("%s=1: workers run WITHOUT early takeover; the checker still expects it", EnvTakeoverOff)
	}
	return LocalWith(cluster.FastParams())(t, n, opts...)
}

func withBreaks(r checker.Requirements) checker.Requirements {
	r.LeaseBreaks = 1
	return r
}

// fastTakeover is the checker's early-takeover bound T + renew interval +
// 1.1·P + 9·request timeout + ε, plus slack.
func fastTakeover(p cluster.Params) time.Duration {
	return p.TakeoverAfter + p.RenewInterval + p.RetryPeriod*11/10 + 9*p.RequestTimeout() + time.Second + slack
}

// lateBreakDelay is how long a late break is held: past a follower's next
// read and break (a poll and two requests) and the next leader's acquire
// and term write, with three seconds to spare (a loaded CI machine used
// more than one), so that it reaches storage once the next leadership holds
// the lease.
func lateBreakDelay(p cluster.Params) time.Duration {
	return p.RetryPeriod*11/10 + 5*p.RequestTimeout() + 3*time.Second
}

// writtenEvents are the events of c's histories so far.
func writtenEvents(t *testing.T, c cluster.Cluster) []checker.Event {
	t.Helper()
	h, err := c.History(ctxFor(t, time.Minute), 0)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	evs, err := checker.ReadWrittenHistory(h.Files...)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// leaseBreaks counts the lease_broken events in the histories so far.
func leaseBreaks(t *testing.T, c cluster.Cluster) []checker.Event {
	t.Helper()
	var out []checker.Event
	for _, e := range writtenEvents(t, c) {
		if e.Event == checker.EventLeaseBroken {
			out = append(out, e)
		}
	}
	return out
}

// stopReason is the reason of id's stopped_leading for term in the
// histories so far ("" when there is none).
func stopReason(t *testing.T, c cluster.Cluster, id string, term int64) string {
	t.Helper()
	for _, e := range writtenEvents(t, c) {
		if e.Event == checker.EventStoppedLeading && e.Identity == id && e.Term == term {
			return e.Reason
		}
	}
	return ""
}

// 1. Host loss: SIGKILL of the leader. A follower breaks its lease once its
// record has been unchanged for T, and leads at once: well within a fifth
// of the lease.
func hostLossFast(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	took := crashLeader(t, c, fastTakeover(p))
	t.Logf("a new leader %v after the SIGKILL (lease %v)", took.Round(time.Millisecond), p.LeaseDuration)
}

// 2. The leader frozen past T but within L (SIGSTOP, then SIGCONT): a
// follower breaks the lease and leads, while the frozen leader's lease has
// not even expired; on resume the old leader must not claim leadership (its
// deadline passed while frozen), and its late heartbeat is refused by
// storage (the lease is broken). The checker judges S1 over the histories
// and the ledger, and that nobody led before the frozen leader had stopped.
func frozenLeaderPastT(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	pause := &chaos.Pause{}
	old, frozen := hitLeader(t, c, pause)
	waitLeader(t, c, fastTakeover(p), old.Identity())
	holdUntil(t, frozen.Add(p.TakeoverAfter+3*time.Second))
	if held := time.Since(frozen); held >= p.LeaseDuration {
		t.Fatalf("the freeze lasted %v, not within L (%v): the scenario did not test what it says", held, p.LeaseDuration)
	}
	resumedNotLeader(t, c, pause, old, "a freeze past its deadline")
}

// 3. Slow storage on every worker's link (a round trip of half the request
// timeout: 250 ms on the fast profile), and a follower paused past T that
// then wakes up: no follower may break the healthy leader, which keeps its
// term throughout. The other half of the request timeout is left for the
// storage's own answer and the machine's scheduling.
//
// The window is as short as the claim allows, because every renew cycle in
// it is a chance for the machine, not the product, to cost the leader its
// term (inconclusive, judged against the run's measured stall). It is the
// settle (every follower has polled twice under the latency), the pause
// (T + 1 s: the woken follower's last sight of a change is past T) and the
// watch after the wake (T, its next poll and a request: when a false break
// would be sent).
func slowStorageAndPausedFollower(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	old := leading(t, c)
	before, err := old.Status(ctxFor(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	oneWay := p.RequestTimeout() / 4 // a round trip of half the timeout
	for _, w := range c.Workers() {
		inject(t, c, &chaos.Latency{Latency: oneWay.Milliseconds(), Stream: chaos.Both}, w)
	}
	var follower cluster.Worker
	for _, w := range c.Workers() {
		if w.Identity() != old.Identity() && w.Running() {
			follower = w
			break
		}
	}
	settle := 2*p.RetryPeriod*11/10 + p.RequestTimeout()
	followerPause := p.TakeoverAfter + time.Second
	watch := p.TakeoverAfter + p.RetryPeriod*11/10 + p.RequestTimeout()
	start := time.Now()
	pausedAt, end := start.Add(settle), start.Add(settle+followerPause+watch)
	paused, woken := false, false
	pause := &chaos.Pause{}
	for time.Now().Before(end) {
		switch {
		case !paused && time.Now().After(pausedAt):
			inject(t, c, pause, follower)
			paused = true
		case paused && !woken && time.Since(pausedAt) > followerPause:
			remove(t, c, pause) // wakes up with an old view and a clock that moved on
			woken = true
		}
		st, err := old.Status(ctxFor(t, 15*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if st.Role != "leader" || st.Term != before.Term {
			// Half the request timeout is what the latency leaves a renew:
			// a stall of that much proves nothing.
			starved(t, c, fmt.Sprintf("under a round trip of half the request timeout the healthy leader %s lost its term %d: %+v", old.Identity(), before.Term, st),
				start, time.Now(), p.RequestTimeout()-2*oneWay)
		}
		hold(t, 250*time.Millisecond) // sampling interval of the check above
	}
	window := end.Sub(start)
	remove(t, c, pause)
	if err := c.Heal(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	hold(t, p.TakeoverAfter+p.RetryPeriod) // a break sent at the end would show by now
	if brks := leaseBreaks(t, c); len(brks) != 0 {
		t.Fatalf("%d break(s) of a healthy leader's lease (false takeovers): %v", len(brks), brks)
	}
	t.Logf("%v of latency %v one way (request timeout %v) on every link, follower %s paused %v: 0 breaks", window, oneWay, p.RequestTimeout(), follower.Identity(), followerPause)
}

// 4. An operator's BreakLease(0) with early takeover on: the lease is free
// at once, a follower leads at its next poll, and no follower sends a break
// of its own.
func operatorBreakFast(t *testing.T, c cluster.Cluster) {
	operatorBreak(t, c)
	if brks := leaseBreaks(t, c); len(brks) != 0 {
		t.Fatalf("followers sent %d break(s) of their own after the operator's: %v", len(brks), brks)
	}
}

// 5. A late break: the leader is SIGKILLed and every follower's first break
// of its lease is held in flight and delivered later (lateBreakDelay), after
// the follower gave up on it and after a second break of its own has ended
// the lease and the next leader took over. Storage must refuse the late break
// (it was decided on the dead leader's record, not the next one's), and the
// next leader keeps its term past the delivery. Judged from the next
// leader's own /status and the checker over every history.
func lateBreakFast(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	old := leading(t, c)
	delay := lateBreakDelay(p)
	var held []*chaos.LateBreak
	for _, w := range c.Workers() {
		if w.Identity() != old.Identity() && w.Running() {
			f := &chaos.LateBreak{Delay: delay.Milliseconds(), Count: 1}
			inject(t, c, f, w)
			held = append(held, f)
		}
	}
	crash := &chaos.Crash{Restart: true}
	inject(t, c, crash, old)
	crashed := time.Now()
	next := waitLeader(t, c, fastTakeover(p)+delay, old.Identity())
	st, err := next.Status(ctxFor(t, 5*time.Second))
	if err != nil || st.Role != "leader" {
		t.Fatalf("the next leader %s: status %+v, %v", next.Identity(), st, err)
	}
	var last time.Time
	for _, f := range held {
		if f.Held() == 0 {
			continue // it read the lease breaking before it found it stale
		}
		ds, err := f.AwaitDelivered(ctxFor(t, delay+slack), 1)
		if err != nil {
			t.Fatal(err)
		}
		d := ds[0]
		t.Logf("held break on %s: sent %v after it was held, answered %d %s", f.Target(), d.Sent.Sub(d.Held).Round(time.Millisecond), d.Status, d.Code)
		if d.Sent.After(last) {
			last = d.Sent
		}
	}
	if !last.IsZero() && !last.After(st.Since) {
		// The next leader came later than the delay allowed for: the
		// machine's stall since the crash may explain that much.
		starved(t, c, fmt.Sprintf("no held break reached storage after %s began leading at %s (last delivery %s): the scenario did not test what it says", next.Identity(), st.Since.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano)),
			crashed, st.Since, st.Since.Sub(last))
	}
	if last.IsZero() {
		t.Fatalf("no held break reached storage after %s began leading at %s (last delivery %s): the scenario did not test what it says", next.Identity(), st.Since.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
	}
	// The leader hears of a break at its next renew: a renew interval and a
	// request timeout after the delivery, it still leads the same term.
	holdUntil(t, last.Add(p.RenewInterval+p.RequestTimeout()+time.Second))
	now, err := next.Status(ctxFor(t, 5*time.Second))
	if err != nil || now.Role != "leader" || now.Term != st.Term {
		// The late break ends a leadership as "lease lost"; a renew
		// deadline missed on a starved machine ends it too, and says so.
		why := stopReason(t, c, next.Identity(), st.Term)
		what := fmt.Sprintf("a late break decided on the dead leader's record ended the next leadership: %s led term %d from %s; after the delivery: %+v, %v (stopped_leading %q)", next.Identity(), st.Term, st.Since.Format(time.RFC3339Nano), now, err, why)
		if strings.HasPrefix(why, "renew deadline exceeded") {
			starved(t, c, what, st.Since, time.Now(), p.RequestTimeout())
		}
		t.Fatal(what)
	}
	for _, f := range held {
		remove(t, c, f)
	}
	remove(t, c, crash)
}

// FastRunKillGrace is `run --profile fast`'s --kill-grace: with early
// takeover the command is SIGKILLed by the end of its leadership and its
// grace comes before (docs/failover.md#commands-under-blobleader-run).
const FastRunKillGrace = 250 * time.Millisecond

// NewFastRunCluster is a run-mode cluster on the fast profile, as `run
// --profile fast` runs it: the election's timings and a 250 ms kill grace.
func NewFastRunCluster(t *testing.T) *RunCluster {
	t.Helper()
	return newRunCluster(t, cluster.FastParams(), cluster.Args("--kill-grace="+FastRunKillGrace.String()))
}

// 6. Host loss under `blobleader run`: the supervisor is SIGKILLed, its
// command (and the command's grandchild) die with it, and the standby's
// command starts after an early takeover, not after the lease.
func supervisorHostLossFast(t *testing.T, rc *RunCluster) []checker.Exception {
	p := rc.Params()
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	hold(t, 2*p.RenewInterval) // the standby has read the leader's heartbeat
	inject(t, rc, &chaos.Crash{}, leader)
	killed := time.Now()
	awaitGone(t, rc.Local, "the command's group after its supervisor's SIGKILL", killed, checker.GuardKillWindow, started.PID, gc)
	next := rc.nextStart(started, fastTakeover(p))
	t.Logf("supervisor and command SIGKILLed; the next command started %v later (lease %v, T %v)", next.T.Sub(killed).Round(time.Millisecond), p.LeaseDuration, p.TakeoverAfter)
	if brks := leaseBreaks(t, rc); len(brks) == 0 {
		// A leader starved past its renew deadline loses the lease before
		// the kill, and its standby takes it without a break.
		starved(t, rc.Local, "the standby took over without breaking the lease: no early takeover happened", started.T, next.T, p.RequestTimeout())
	}
	return nil
}
