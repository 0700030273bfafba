package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
)

// Run mode's host-side faults: a supervisor that is alive but stuck, and a
// command whose jobs leave its process group. Each is judged on the
// commands' own reports (CheckCommands), not only on what a supervisor
// says of itself: a frozen supervisor cannot report its own command.
var (
	SupervisorFrozenAlone          = CommandScenario{"SupervisorFrozenAlone", supervisorFrozenAlone}
	JobControlStop                 = CommandScenario{"JobControlStop", jobControlStop}
	EscapingDescendants            = CommandScenario{"EscapingDescendants", escapingDescendants}
	EscapingDescendantsOfTheKilled = CommandScenario{"EscapingDescendantsSupervisorKilled", escapingDescendantsSupervisorKilled}
)

// deathOf polls /proc until none of pids runs (a zombie runs nothing) and
// returns when that was seen, or the zero time after timeout.
func deathOf(t *testing.T, timeout time.Duration, pids ...int) time.Time {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; hold(t, 5*time.Millisecond) {
		any := false
		for _, p := range pids {
			any = any || chaos.ProcAlive(p)
		}
		if !any {
			return time.Now()
		}
		if time.Now().After(deadline) {
			return time.Time{}
		}
	}
}

func stoppedNow(sr chaos.StateReader) bool {
	stopped, err := sr.Stopped()
	return err == nil && stopped
}

// The supervisor alone is frozen (SIGSTOP to its pid; its command and the
// command's grandchild run on) for longer than the lease. Its guard holds
// the leadership's deadline: with no extension it kills the group itself,
// so the command is dead (seen in /proc, and in its own reports) before the
// standby's command starts. Thawed, the supervisor reaps it and reports it.
func supervisorFrozenAlone(t *testing.T, rc *RunCluster) []checker.Exception {
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	freeze := &chaos.SupervisorFreeze{}
	inject(t, rc, freeze, leader)
	frozen := time.Now()
	dead := deathOf(t, takeover(rc.Params()), started.PID, gc)
	next := rc.nextStart(started, takeover(rc.Params()))
	rc.awaitActivity(10*time.Second, "the next command's first append", func(a checker.Activity) bool {
		return a.Holder == next.Identity && strings.HasPrefix(a.What, "append ok")
	})
	remove(t, rc, freeze)
	if dead.IsZero() || !dead.Before(next.T) {
		t.Errorf("command %d or its grandchild %d still ran when the next command started at %s (%v after the freeze; dead: %v): the frozen supervisor's command outlived its leadership",
			started.PID, gc, next.T.Format(time.RFC3339Nano), next.T.Sub(frozen).Round(time.Millisecond), dead)
	}
	exited := rc.exitOf(started, 20*time.Second)
	if exited.Cause != "leadership_ended" {
		t.Errorf("child_exited %s: want cause leadership_ended (its guard killed it)", exited.Raw)
	}
	if dead.IsZero() {
		return nil
	}
	t.Logf("supervisor frozen alone: its command dead %v after the freeze, %v before the next command started",
		dead.Sub(frozen).Round(time.Millisecond), next.T.Sub(dead).Round(time.Millisecond))
	return nil
}

// A job-control stop (SIGTSTP: a ^Z) reaches the supervisor alone. It must
// not stop: it keeps leading and renewing, no other command starts while
// its own runs. Then it is stopped gracefully, to hand over.
func jobControlStop(t *testing.T, rc *RunCluster) []checker.Exception {
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	js := &chaos.JobStop{Signal: "SIGTSTP"}
	inject(t, rc, js, leader)
	sent := time.Now()
	window := takeover(rc.Params())
	stoppedSeen, took := false, false
	for time.Since(sent) < window && !took {
		if sr, ok := leader.(chaos.StateReader); ok && !stoppedSeen && stoppedNow(sr) {
			stoppedSeen = true
			t.Errorf("the supervisor stopped on SIGTSTP %v after it was sent, while its command runs on", time.Since(sent).Round(time.Millisecond))
		}
		for _, e := range rc.children() {
			if e.Event.Event == checker.EventChildStarted && e.Identity != started.Identity {
				took = true
				t.Errorf("another command started (%s) %v after SIGTSTP to the leader's supervisor", e.Raw, e.T.Sub(sent).Round(time.Millisecond))
			}
		}
		hold(t, 100*time.Millisecond)
	}
	if took {
		// Let the other command write, then continue the stopped one: it
		// kills its command on resume; the checker judges the overlap.
		hold(t, time.Second)
		remove(t, rc, js)
		rc.exitOf(started, 20*time.Second)
		return nil
	}
	remove(t, rc, js)
	inject(t, rc, &chaos.Stop{}, leader)
	exited := rc.exitOf(started, 20*time.Second)
	next := rc.nextStart(started, 20*time.Second)
	t.Logf("SIGTSTP ignored for %v (> the lease); then stopped: hand-over %v after its command was reaped", window, next.T.Sub(exited.T).Round(time.Millisecond))
	return nil
}

// escapedJobs signals the command to start its escaping jobs (chaos.Escape)
// and returns their pids once they report.
func (rc *RunCluster) escapedJobs(t *testing.T, started checker.ChildEvent) []int {
	t.Helper()
	if err := (&chaos.Escape{PID: started.PID, Name: started.Identity}).Inject(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	rc.awaitActivity(10*time.Second, "the escaping jobs", func(a checker.Activity) bool {
		return a.Holder == started.Identity && a.Term == started.Term && a.What == "escaping jobs started"
	})
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(pids) < 2 {
		pids = pids[:0]
		for _, a := range rc.Activity() {
			if a.Holder == started.Identity && a.Term == started.Term && a.What == "grandchild started" && a.PID != started.PID {
				pids = append(pids, a.PID)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d escaping job(s) reported within 10s, want 2", len(pids))
		}
		hold(t, 25*time.Millisecond)
	}
	return pids
}

// Like a cron daemon, the command starts long jobs in a new session and in
// a new process group. The supervisor is stopped (SIGTERM): every job must
// be dead and reaped before child_exited, so before the next command
// starts; a job that reports after that is an S1-commands violation.
func escapingDescendants(t *testing.T, rc *RunCluster) []checker.Exception {
	leader, _, started := firstCommand(t, rc, nil, nil)
	jobs := rc.escapedJobs(t, started)
	inject(t, rc, &chaos.Stop{}, leader)
	exited := rc.exitOf(started, 20*time.Second)
	next := rc.nextStart(started, 20*time.Second)
	for _, j := range jobs {
		if chaos.ProcAlive(j) {
			t.Errorf("escaped job %d still runs after its supervisor reported its command reaped and the next command started", j)
		}
		if last := rc.lastActivity(j); !last.Before(next.T) {
			t.Errorf("escaped job %d reported at %s, not before the next command started at %s", j, last.Format(time.RFC3339Nano), next.T.Format(time.RFC3339Nano))
		}
	}
	t.Logf("jobs %v in a new session and a new process group: reaped with the command (%v before the next start)", jobs, next.T.Sub(exited.T).Round(time.Millisecond))
	return nil
}

// The same jobs, and the supervisor is SIGKILLed: its guard kills them too
// (not only the command's process group), long before the lease expires.
func escapingDescendantsSupervisorKilled(t *testing.T, rc *RunCluster) []checker.Exception {
	leader, _, started := firstCommand(t, rc, nil, nil)
	jobs := rc.escapedJobs(t, started)
	inject(t, rc, &chaos.Crash{}, leader)
	killed := time.Now()
	if dead := deathOf(t, 5*time.Second, append([]int{started.PID}, jobs...)...); dead.IsZero() {
		t.Fatalf("the command %d or its escaped jobs %v still run 5 s after their supervisor was SIGKILLed", started.PID, jobs)
	}
	next := rc.nextStart(started, takeover(rc.Params()))
	t.Logf("supervisor SIGKILLed: command and escaped jobs %v dead; the next command started %v later", jobs, next.T.Sub(killed).Round(time.Millisecond))
	return nil
}

// runModeActions are the host-side faults in the run-mode soak's mix, on
// top of soakActions: a supervisor frozen alone past the lease, a
// job-control stop, and the running command starting escaping jobs.
func (rc *RunCluster) runModeActions() []action {
	p := rc.Params()
	return []action{
		{"supervisor-freeze", 2, p.LeaseDuration + 2*time.Second, p.LeaseDuration + 8*time.Second, false, func(s *soak) []chaos.Fault {
			return []chaos.Fault{s.bind(&chaos.SupervisorFreeze{}, s.leaderOrAny())}
		}},
		{"job-stop", 1, 2 * time.Second, 8 * time.Second, false, func(s *soak) []chaos.Fault {
			return []chaos.Fault{s.bind(&chaos.JobStop{Signal: []string{"SIGTSTP", "SIGTTIN", "SIGTTOU"}[s.rng.IntN(3)]}, s.leaderOrAny())}
		}},
		{"escape", 1, 2 * time.Second, 8 * time.Second, false, func(s *soak) []chaos.Fault {
			if s.leader == nil {
				return nil
			}
			if pid := rc.runningCommand(s.leader.Identity()); pid > 0 {
				return []chaos.Fault{s.bind(&chaos.Escape{PID: pid, Name: s.leader.Identity()}, nil)}
			}
			return nil
		}},
	}
}

// runningCommand is the pid of identity's command that has started and not
// exited, as its history says; 0 if none.
func (rc *RunCluster) runningCommand(identity string) int {
	open := map[int]bool{}
	for _, e := range rc.children() {
		if e.Identity != identity {
			continue
		}
		switch e.Event.Event {
		case checker.EventChildStarted:
			open[e.PID] = true
		case checker.EventChildExited:
			delete(open, e.PID)
		}
	}
	for pid := range open {
		if chaos.ProcAlive(pid) {
			return pid
		}
	}
	return 0
}
