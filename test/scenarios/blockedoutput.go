package scenarios

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// Blocked output (docs/failover.md, "Commands"; docs/architecture.md#logs):
// the worker's stdout and stderr become a full pipe nobody reads, then one of
// its renews fails, then it is cut off from storage. Logging on the safety
// path must not stop it: after the failed renew it renews again, and when it
// is cut off it steps down (and, in run mode, kills its command) by its
// deadline. Judged from the worker's own history and, in run mode, from the
// commands' own timestamped activity.

// BlockedOutputLeaderStepsDown is the worker-mode scenario.
var BlockedOutputLeaderStepsDown = Scenario{Name: "BlockedOutputLeaderStepsDown", Workers: 3, Run: blockedOutputLeader,
	Opts: []cluster.Option{cluster.BlockableOutput()}, Requires: hitAndFailover(checker.FaultPartition)}

// SupervisorOutputBlocked is the run-mode scenario.
var SupervisorOutputBlocked = CommandScenario{"SupervisorOutputBlocked", supervisorOutputBlocked}

// historyOf reads every history file of the local cluster c so far.
func historyOf(t *testing.T, c cluster.Cluster) []checker.Event {
	t.Helper()
	l, ok := c.(interface{ HistoryFiles() []string })
	if !ok {
		t.Fatalf("%T has no local history files", c)
	}
	evs, err := checker.ReadWrittenHistory(l.HistoryFiles()...)
	if err != nil {
		t.Fatalf("read histories: %v", err)
	}
	return evs
}

// awaitEvent polls the histories until an event satisfies pred, or timeout
// (a waiting's). A wait the machine starved ends t's attempt inconclusive
// (waiting.fatal): its caller may judge a missing event a failure.
func awaitEvent(t *testing.T, c cluster.Cluster, timeout time.Duration, pred func(checker.Event) bool) (checker.Event, bool) {
	t.Helper()
	wt := waitOn(c, timeout)
	for {
		if i := slices.IndexFunc(historyOf(t, c), pred); i >= 0 {
			return historyOf(t, c)[i], true
		}
		if wt.over() {
			if wt.starvedOut() {
				wt.fatal(t, "waited %v for an event in the histories, in vain", wt)
			}
			return checker.Event{}, false
		}
		hold(t, 25*time.Millisecond) // polling files another process writes
	}
}

// termOf is the term w leads now, from its history's last started_leading.
func termOf(t *testing.T, c cluster.Cluster, w cluster.Worker) int64 {
	t.Helper()
	var term int64
	for _, e := range historyOf(t, c) {
		if e.Identity == w.Identity() && e.Event == checker.EventStartedLeading {
			term = e.Term
		}
	}
	if term == 0 {
		t.Fatalf("%s has no started_leading in its history", w.Identity())
	}
	return term
}

// blockedOutputFault blocks w's stdout and stderr, then black-holes its
// storage link until one renew of term has failed, heals the link, and
// waits for w to renew term again: a leader whose election loop waits on a
// log write never does. It returns that failure as an error (nil: renewed).
func oneRenewFailsWithOutputBlocked(t *testing.T, c cluster.Cluster, w cluster.Worker, term int64) error {
	t.Helper()
	p := c.Params()
	inject(t, c, &chaos.BlockedOutput{}, w) // healed by Judge
	drop := &chaos.Timeout{}
	inject(t, c, drop, w)
	failed, ok := awaitEvent(t, c, p.RenewInterval+p.RequestTimeout()+slack, func(e checker.Event) bool {
		return e.Identity == w.Identity() && e.Event == checker.EventRenewFailed && e.Term == term
	})
	remove(t, c, drop)
	if !ok {
		t.Fatalf("no renew_failed of term %d from %s under a black-holed link", term, w.Identity())
	}
	// The link is back: the next renew, within a renew interval, succeeds.
	// Wait up to the leadership's deadline: a renew after that is too late.
	renewed, ok := awaitEvent(t, c, p.RenewDeadline, func(e checker.Event) bool {
		return e.Identity == w.Identity() && e.Event == checker.EventRenewed && e.Term == term && e.T.After(failed.T)
	})
	if !ok {
		return fmt.Errorf("%s did not renew term %d within %v after its failed renew at %s, with its stdout/stderr a full pipe: the election loop waits on a log write",
			w.Identity(), term, p.RenewDeadline, failed.T.Format(time.RFC3339Nano))
	}
	t.Logf("%s renewed term %d %v after the failed renew, output still blocked", w.Identity(), term, renewed.T.Sub(failed.T).Round(time.Millisecond))
	return nil
}

// partitionSteppingDown cuts w (output still blocked) off from storage and
// waits for its stopped_leading of term, which must come by its deadline
// (the valid_until it had) plus grace plus 1 s of scheduling slack, plus
// the stall the CPU probe measured after the deadline (timingBound). grace
// is what the task may take to return after the deadline: none for a
// worker; a supervisor's command may use its whole --kill-grace before
// the SIGKILL, and stopped_leading is written once it is reaped. It
// returns the step-down's delay past the deadline.
func partitionSteppingDown(t *testing.T, c cluster.Cluster, w cluster.Worker, term int64, grace time.Duration) time.Duration {
	t.Helper()
	p := c.Params()
	inject(t, c, &chaos.Partition{}, w) // healed by Judge
	stopped, ok := awaitEvent(t, c, p.RenewDeadline+p.RequestTimeout()+slack, func(e checker.Event) bool {
		return e.Identity == w.Identity() && e.Event == checker.EventStoppedLeading && e.Term == term
	})
	if !ok {
		t.Fatalf("%s, cut off from storage with its output blocked, wrote no stopped_leading of term %d within %v", w.Identity(), term, p.RenewDeadline+p.RequestTimeout()+slack)
	}
	if stopped.ValidUntil.IsZero() {
		t.Fatalf("stopped_leading without valid_until: %s", stopped)
	}
	late := stopped.T.Sub(stopped.ValidUntil)
	timingBound(t, c, fmt.Sprintf("%s's step-down, %v after its deadline %s (want ≤ %v): %s", w.Identity(), late, stopped.ValidUntil.Format(time.RFC3339Nano), grace+time.Second, stopped),
		stopped.ValidUntil, stopped.ValidUntil.Add(grace+time.Second), stopped.T)
	t.Logf("%s stepped down %v after its deadline, output blocked", w.Identity(), late.Round(time.Millisecond))
	return late
}

// Worker mode: the leader's output is blocked and one renew fails; it keeps
// its term. Then it is cut off: it steps down by its deadline and a follower
// takes over (checked by the checker: S1, S2, L1).
func blockedOutputLeader(t *testing.T, c cluster.Cluster) {
	p := c.Params()
	old := leading(t, c)
	term := termOf(t, c, old)
	if err := oneRenewFailsWithOutputBlocked(t, c, old, term); err != nil {
		t.Error(err) // and go on: does it still step down when cut off?
	}
	partitionSteppingDown(t, c, old, term, 0)
	waitLeader(t, c, takeover(p), old.Identity())
}

// Run mode: the same with a supervisor and its command. The overlap of the
// two commands is judged from their own activity (and by CheckCommands).
func supervisorOutputBlocked(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.opts = []cluster.Option{cluster.BlockableOutput()}
	// The command takes its whole grace (it ignores SIGTERM), as the
	// design lets any command: the supervisor, output blocked, must
	// SIGKILL it at the deadline plus --kill-grace.
	leader, _, started := firstCommand(t, rc, []string{"--ignore-term"}, nil)
	if err := oneRenewFailsWithOutputBlocked(t, rc, leader, started.Term); err != nil {
		t.Error(err)
		// Show what follows from the commands' own output: once the lease
		// expires the next command runs, and the stuck supervisor's still
		// does (its writes fenced).
		next := rc.nextStart(started, takeover(rc.Params())+rc.Params().RenewDeadline)
		opened := rc.awaitActivity(10*time.Second, "the next command's ledger open", func(a checker.Activity) bool {
			return a.Holder == next.Identity && a.What == "open ok"
		})
		still := rc.awaitActivity(10*time.Second, "the stuck supervisor's command still running", func(a checker.Activity) bool {
			return a.Holder == started.Identity && a.Term == started.Term && a.At.After(opened.At)
		})
		t.Errorf("two commands at once: %s's command %d (term %d) reported %q at %s, after the next command (term %d) opened the ledger at %s; overlap so far %v",
			started.Identity, started.PID, started.Term, still.What, still.At.Format(time.RFC3339Nano), next.Term, opened.At.Format(time.RFC3339Nano), commandOverlap(rc, started, next))
		return nil
	}
	partitionSteppingDown(t, rc, leader, started.Term, DefaultRunKillGrace)
	exited := rc.exitOf(started, takeover(rc.Params()))
	next := rc.nextStart(started, takeover(rc.Params()))
	rc.awaitActivity(10*time.Second, "the next command's first report", func(a checker.Activity) bool {
		return a.Holder == next.Identity && a.Term == next.Term
	})
	if ov := commandOverlap(rc, started, next); ov > 0 {
		t.Errorf("the blocked supervisor's command %d reported %v after the next command's first report (want 0)", started.PID, ov)
	}
	if !exited.T.Before(next.T) {
		t.Errorf("the blocked supervisor's command was reaped at %s, not before the next started at %s", exited.T, next.T)
	}
	t.Logf("output blocked: command reaped %v before the next command started", next.T.Sub(exited.T).Round(time.Millisecond))
	return nil
}

// commandOverlap is how long the command started by a kept reporting after
// the first report of the command started by b, from their own activity
// (0 when it had stopped before).
func commandOverlap(rc *RunCluster, a, b checker.ChildEvent) time.Duration {
	var lastA, firstB time.Time
	for _, act := range rc.Activity() {
		if act.Holder == a.Identity && act.Term == a.Term && act.At.After(lastA) {
			lastA = act.At
		}
		if act.Holder == b.Identity && act.Term == b.Term && (firstB.IsZero() || act.At.Before(firstB)) {
			firstB = act.At
		}
	}
	if lastA.IsZero() || firstB.IsZero() {
		return 0
	}
	return max(0, lastA.Sub(firstB))
}
