package scenarios

import (
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// The guard and the supervisor against their own output and each other's
// death (docs/failover.md, "Commands"): the supervisor's stdout/stderr a
// pipe whose reader exits, or a full pipe nobody reads, or /dev/full; the
// guard killed alone. Each is judged from the commands' own reports: the old
// command (and its grandchild, which ignores polite signals and reports
// every 50 ms) is dead before the next host's command starts, and nothing
// of it is reported after the next command's first report.
var (
	OutputReaderGoneStop          = CommandScenario{"OutputReaderGoneSupervisorStopped", outputReaderGoneStop}
	OutputReaderGoneKilled        = CommandScenario{"OutputReaderGoneSupervisorKilled", outputReaderGoneKilled}
	BlockedOutputSupervisorFrozen = CommandScenario{"BlockedOutputSupervisorFrozen", blockedOutputFrozen}
	BlockedOutputSupervisorKilled = CommandScenario{"BlockedOutputSupervisorKilled", blockedOutputKilled}
	FullOutputSupervisorFrozen    = CommandScenario{"FullOutputSupervisorFrozen", fullOutputFrozen}
	GuardKilledThenFrozen         = CommandScenario{"GuardKilledThenSupervisorFrozenAtOnce", guardKilledThenFrozen}
)

// guardKillBound: after its supervisor dies, the guard kills the group at
// once; a second covers the scheduling of three processes on a busy machine
// (the checker's GuardKillWindow is the same allowance).
const guardKillBound = time.Second

// handedOver waits for the next host's command and its first report, and
// fails t unless the command started by old and its grandchild gc were dead
// (seen in /proc within within of fault) before the next command started,
// and reported nothing after the next command's first report. It returns
// the time from fault to their death (0 if they never died) and the next
// command's start.
func (rc *RunCluster) handedOver(t *testing.T, old checker.ChildEvent, gc int, fault time.Time, within time.Duration) (time.Duration, checker.ChildEvent) {
	t.Helper()
	dead := deathOf(t, within, old.PID, gc)
	next := rc.nextStart(old, takeover(rc.Params()))
	rc.awaitActivity(10*time.Second, "the next command's first report", func(a checker.Activity) bool {
		return a.Holder == next.Identity && a.Term == next.Term
	})
	hold(t, time.Second) // watch for 20 of the grandchild's reports more
	if ov := commandOverlap(rc, old, next); ov > 0 {
		t.Errorf("%s's command (pid %d, grandchild %d, term %d) reported for %v after the next command's first report: two commands at once",
			old.Identity, old.PID, gc, old.Term, ov.Round(time.Millisecond))
	}
	if dead.IsZero() {
		t.Errorf("%s's command %d or its grandchild %d still ran %v after the fault (the next command started %v after it)",
			old.Identity, old.PID, gc, within, next.T.Sub(fault).Round(time.Millisecond))
		return 0, next
	}
	if !dead.Before(next.T) {
		t.Errorf("%s's command died at %s, not before the next command started at %s", old.Identity, dead.Format(time.RFC3339Nano), next.T.Format(time.RFC3339Nano))
	}
	return dead.Sub(fault), next
}

// The supervisor's output goes to a pipe whose reader exits (`| tee` that
// died); then the supervisor is stopped (SIGTERM). Its log lines fail with
// EPIPE: it must neither die of SIGPIPE nor stop short, but stop its
// command and grandchild, release, and so hand over at once.
func outputReaderGoneStop(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.opts = []cluster.Option{cluster.BlockableOutput()}
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	inject(t, rc, &chaos.OutputReaderGone{}, leader)
	stop := time.Now()
	inject(t, rc, &chaos.Stop{}, leader)
	took, next := rc.handedOver(t, started, gc, stop, rc.Params().ShutdownGrace+2*time.Second)
	exited := rc.exitOf(started, 10*time.Second)
	if exited.Cause != "shutdown" {
		t.Errorf("child_exited %s: want cause shutdown", exited.Raw)
	}
	t.Logf("output reader gone, then SIGTERM: command dead %v after it, next command %v after its reaped exit",
		took.Round(time.Millisecond), next.T.Sub(exited.T).Round(time.Millisecond))
	return nil
}

// The output's reader exits, then the supervisor is SIGKILLed: its guard
// must not die of SIGPIPE on its own report before it killed the group.
func outputReaderGoneKilled(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.opts = []cluster.Option{cluster.BlockableOutput()}
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	inject(t, rc, &chaos.OutputReaderGone{}, leader)
	killed := time.Now()
	inject(t, rc, &chaos.Crash{}, leader)
	took, _ := rc.handedOver(t, started, gc, killed, guardKillBound)
	t.Logf("output reader gone, supervisor SIGKILLed: its group dead %v later", took.Round(time.Millisecond))
	return nil
}

// The output is a full pipe nobody reads, and the supervisor is frozen
// alone: the guard's deadline passes; it must kill first and report after
// (its report blocks on the same pipe).
func blockedOutputFrozen(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.opts = []cluster.Option{cluster.BlockableOutput()}
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	inject(t, rc, &chaos.BlockedOutput{}, leader) // healed by Judge
	freeze := &chaos.SupervisorFreeze{}
	inject(t, rc, freeze, leader)
	frozen := time.Now()
	took, _ := rc.handedOver(t, started, gc, frozen, takeover(rc.Params()))
	remove(t, rc, freeze)
	t.Logf("output a full pipe, supervisor frozen: its command dead %v after the freeze", took.Round(time.Millisecond))
	return nil
}

// The output is a full pipe nobody reads, and the supervisor is SIGKILLed:
// the guard must kill the group before it reports.
func blockedOutputKilled(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.opts = []cluster.Option{cluster.BlockableOutput()}
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	inject(t, rc, &chaos.BlockedOutput{}, leader) // healed by Judge
	killed := time.Now()
	inject(t, rc, &chaos.Crash{}, leader)
	took, _ := rc.handedOver(t, started, gc, killed, guardKillBound)
	t.Logf("output a full pipe, supervisor SIGKILLed: its group dead %v later", took.Round(time.Millisecond))
	return nil
}

// The supervisors' stdout and stderr are /dev/full (every write fails with
// ENOSPC, as on a full disk); the leader's supervisor is frozen alone: its
// guard kills the command by the deadline, its failed report after.
func fullOutputFrozen(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.opts = []cluster.Option{cluster.Launch(&chaos.FullOutput{})}
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	freeze := &chaos.SupervisorFreeze{}
	inject(t, rc, freeze, leader)
	frozen := time.Now()
	took, _ := rc.handedOver(t, started, gc, frozen, takeover(rc.Params()))
	remove(t, rc, freeze)
	t.Logf("output on /dev/full, supervisor frozen: its command dead %v after the freeze", took.Round(time.Millisecond))
	return nil
}

// The guard alone is SIGKILLed, and at once (before the supervisor could
// start another) the supervisor is frozen alone: the deadline must still be
// held (the shim holds it too), so the command dies by it, before the next
// host's command starts. Thawed, the supervisor reports the guard's death
// (guard_lost).
func guardKilledThenFrozen(t *testing.T, rc *RunCluster) []checker.Exception {
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	gk := &chaos.GuardKill{}
	inject(t, rc, gk, leader)
	freeze := &chaos.SupervisorFreeze{}
	inject(t, rc, freeze, leader)
	frozen := time.Now()
	p := rc.Params()
	took, _ := rc.handedOver(t, started, gc, frozen, takeover(p))
	remove(t, rc, freeze)
	if _, ok := awaitEvent(t, rc, p.RenewInterval+slack, func(e checker.Event) bool {
		return e.Identity == leader.Identity() && e.Event == "guard_lost" && e.Term == started.Term
	}); !ok {
		t.Errorf("no guard_lost event from %s after its guard %d was SIGKILLed and it was thawed", leader.Identity(), gk.Guard)
	}
	t.Logf("guard killed, supervisor frozen at once: command dead %v after the freeze", took.Round(time.Millisecond))
	return nil
}
