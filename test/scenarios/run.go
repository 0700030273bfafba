package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/supervise"
)

// Run mode's scenarios (docs/chaos.md#scenarios): every worker is a
// `blobleader run` supervisor of test/cmd/ledgercmd, which appends to its own
// fenced ledger with BLOBLEADER_TERM and reports what it does. The supervisors
// are judged by Check as in worker mode; the commands by CheckCommands, on
// command lifetimes, the commands' ledger and their activity.

// commandBlob is the commands' ledger ("leader-cmd-ledger/…"), apart from
// the reference task's, so Check's worker-mode ledger rules do not apply to
// it.
const commandBlob = "leader-cmd"

// DefaultRunKillGrace is `run`'s --kill-grace default (docs/architecture.md):
// a run cluster's supervisors SIGKILL their command this long after its
// SIGTERM.
const DefaultRunKillGrace = time.Second

// CommandScenario is one run-mode scenario: it gets a run cluster with no
// supervisor started, starts them itself, provokes the scenario, and
// returns the named exceptions it provoked (nil: none).
type CommandScenario struct {
	Name string
	Run  func(t *testing.T, rc *RunCluster) []checker.Exception
}

// The run-mode scenarios, one per case docs/failover.md#commands-under-blobleader-run
// argues.
var (
	CommandKilled              = CommandScenario{"CommandKilled", commandKilled}
	CommandExitsOnItsOwn       = CommandScenario{"CommandExitsOnItsOwn", commandExits}
	CommandIgnoresTerm         = CommandScenario{"CommandIgnoresTermWithGrandchild", commandIgnoresTerm}
	SupervisorKilled           = CommandScenario{"SupervisorKilled", supervisorKilled}
	SupervisorPartitioned      = CommandScenario{"SupervisorPartitioned", supervisorPartitioned}
	SupervisorAndCommandFrozen = CommandScenario{"SupervisorAndCommandFrozen", frozenTogether}
)

// RunCluster is a local cluster whose workers supervise ledgercmd.
type RunCluster struct {
	*cluster.Local
	t        *testing.T
	lastRun  checker.CommandRun // what Judge judged
	cmd      string
	activity string           // the commands' shared activity log
	freezes  []checker.Fault  // freezes the scenario injected itself
	opts     []cluster.Option // more options for Supervise (e.g. BlockableOutput)
}

// NewRunCluster starts Azurite and builds the test command; no supervisor
// runs yet.
func NewRunCluster(t *testing.T) *RunCluster {
	t.Helper()
	return newRunCluster(t, cluster.Params{})
}

// newRunCluster is a run cluster with timings p (zero: the defaults) whose
// supervisors get opts. A failed run keeps its evidence (keepOnFailure):
// the supervisors' log tails in the test's output, and with
// $BLOBLEADER_CHAOS_OUT their histories, logs and the activity log.
func newRunCluster(t *testing.T, p cluster.Params, opts ...cluster.Option) *RunCluster {
	t.Helper()
	c := cluster.NewLocal(t, cluster.LocalConfig{Params: p})
	rc := &RunCluster{Local: c, t: t, cmd: cluster.LedgerCommandBinary(t), activity: filepath.Join(c.Dir(), "activity.jsonl"), opts: opts}
	keepOnFailure(t, c, rc.activity)
	return rc
}

// Supervise starts n supervisors whose command is ledgercmd with flags.
func (rc *RunCluster) Supervise(n int, flags ...string) []cluster.Worker {
	rc.t.Helper()
	cmd := append([]string{rc.cmd, "--connection-string", rc.DirectConnectionString(), "--container", rc.ContainerName(),
		"--blob", commandBlob, "--activity", rc.activity, "--interval", "100ms"}, flags...)
	ws, err := rc.Start(ctxFor(rc.t, time.Minute), n, append([]cluster.Option{cluster.RunCommand(cmd...)}, rc.opts...)...)
	if err != nil {
		rc.t.Fatalf("start %d supervisors: %v", n, err)
	}
	return ws
}

// events reads every history so far (in time order).
func (rc *RunCluster) events() []checker.Event {
	rc.t.Helper()
	evs, err := checker.ReadWrittenHistory(rc.HistoryFiles()...)
	if err != nil {
		rc.t.Fatalf("read histories: %v", err)
	}
	return evs
}

func (rc *RunCluster) children() []checker.ChildEvent {
	out, err := checker.ChildEvents(rc.events())
	if err != nil {
		rc.t.Fatal(err)
	}
	return out
}

// awaitChild polls the histories until a child event satisfies pred.
func (rc *RunCluster) awaitChild(timeout time.Duration, what string, pred func(checker.ChildEvent) bool) checker.ChildEvent {
	rc.t.Helper()
	wt := waitOn(rc.Local, timeout)
	for {
		for _, e := range rc.children() {
			if pred(e) {
				return e
			}
		}
		if wt.over() {
			wt.fatal(rc.t, "waited %v for %s, in vain; child events: %v", wt, what, rc.children())
		}
		hold(rc.t, 25*time.Millisecond)
	}
}

// Activity reads the commands' activity log.
func (rc *RunCluster) Activity() []checker.Activity {
	rc.t.Helper()
	out, err := checker.ReadActivity(rc.activity)
	if err != nil {
		rc.t.Fatal(err)
	}
	return out
}

// awaitActivity polls the activity log until an entry satisfies pred.
func (rc *RunCluster) awaitActivity(timeout time.Duration, what string, pred func(checker.Activity) bool) checker.Activity {
	rc.t.Helper()
	wt := waitOn(rc.Local, timeout)
	for {
		for _, a := range rc.Activity() {
			if pred(a) {
				return a
			}
		}
		if wt.over() {
			wt.fatal(rc.t, "waited %v for %s, in vain; child events: %v", wt, what, rc.children())
		}
		hold(rc.t, 25*time.Millisecond)
	}
}

// Judge heals, judges the supervisors (Check, with the report) and the
// commands (CheckCommands), and fails t unless their composed verdict
// passes (an inconclusive one is retried under retryInconclusive). It
// fails t too when the run holds no command lifetime to judge.
func (rc *RunCluster) Judge(name string, exceptions ...checker.Exception) checker.CommandResult {
	t := rc.t
	t.Helper()
	run, res := Judge(t, rc.Local, name)
	ledger, err := ReadLedger(ctxFor(t, time.Minute), rc.Storage(), commandBlob)
	if err != nil {
		t.Fatalf("read the commands' ledger: %v", err)
	}
	activity := rc.Activity()
	// The commands kept running while the supervisors were judged: their
	// run ends after everything of theirs was read, so a command still
	// running is open until then (not "writing after its end").
	run.End = time.Now()
	run.Ledger = ledger
	run.Faults = append(run.Faults, rc.freezes...)
	run.Sched = schedOf(rc.Local) // to the run's new end
	cp := checker.CommandParams{Params: CheckerParams(rc.Params()), Exceptions: exceptions}
	rc.lastRun = checker.CommandRun{Run: run, Activity: activity}
	cres, err := checker.CheckCommands(rc.lastRun, cp)
	if err != nil {
		t.Fatalf("checker: %v", err)
	}
	t.Logf("commands: %d lifetimes, %d ledger entries, %d activity lines, %d violations, %d expected",
		len(cres.Lifetimes), len(ledger), len(activity), len(cres.Violations), len(cres.Expected))
	for _, fo := range cres.Failovers {
		t.Logf("command failover after %s's command (pid %d) exited: %v to %s (bound %v)%s", fo.From.Identity, fo.From.PID,
			fo.Duration.Round(time.Millisecond), fo.NewIdentity, fo.Bound, map[bool]string{true: "; inconclusive: " + fo.Inconclusive}[fo.Inconclusive != ""])
	}
	for _, v := range cres.Expected {
		t.Logf("expected (named exception): %s", v.Message)
	}
	for _, v := range cres.Stalled {
		t.Logf("inconclusive: %s", v)
	}
	judged(t, "supervisors and commands", checker.Compose(res.Verdict, cres.Verdict))
	if len(cres.Lifetimes) < 2 {
		t.Errorf("only %d command lifetime(s) in the run: no evidence of a hand-over to judge", len(cres.Lifetimes))
	}
	if len(ledger) == 0 {
		t.Error("the commands' ledger is empty: the commands never wrote, nothing to judge S2 on")
	}
	return cres
}

// RunCommandScenario runs s Repeat(t) times, each on a fresh cluster. A
// named exception the scenario provoked must show in the verdict: a
// scenario that claims to show it and does not has shown nothing.
func RunCommandScenario(t *testing.T, s CommandScenario) {
	t.Helper()
	repeatRuns(t, func(t *testing.T) {
		rc := NewRunCluster(t)
		exc := s.Run(t, rc)
		res := rc.Judge(reportName(t), exc...)
		if len(exc) > 0 {
			if len(res.Expected) == 0 {
				t.Errorf("the scenario provoked %v, but the checker saw no such overlap", exc)
			}
			// Only the named exception excuses it: without it, the
			// same run is an S1-commands violation.
			bare, err := checker.CheckCommands(rc.lastRun, checker.CommandParams{Params: CheckerParams(rc.Params())})
			if err != nil || bare.OK() {
				t.Errorf("without %v the checker should report S1-commands on this run; got %v, %v", exc, bare.Violations, err)
			}
		}
	})
}

// firstCommand starts a leader supervisor with leaderFlags, waits for its
// command to write, then starts a standby with standbyFlags (so the leader
// is known), and returns both and the leader's child_started.
func firstCommand(t *testing.T, rc *RunCluster, leaderFlags, standbyFlags []string) (leader, standby cluster.Worker, started checker.ChildEvent) {
	t.Helper()
	leader = rc.Supervise(1, leaderFlags...)[0]
	started = rc.awaitChild(takeover(rc.Params()), "first child_started", func(e checker.ChildEvent) bool { return e.Event.Event == checker.EventChildStarted })
	rc.awaitActivity(10*time.Second, "a first ledger append", func(a checker.Activity) bool {
		return a.Holder == leader.Identity() && strings.HasPrefix(a.What, "append ok")
	})
	standby = rc.Supervise(1, standbyFlags...)[0]
	return leader, standby, started
}

// exitOf waits for the child_exited of the command started by s.
func (rc *RunCluster) exitOf(s checker.ChildEvent, timeout time.Duration) checker.ChildEvent {
	rc.t.Helper()
	return rc.awaitChild(timeout, fmt.Sprintf("child_exited of %s's command %d", s.Identity, s.PID), func(e checker.ChildEvent) bool {
		return e.Event.Event == checker.EventChildExited && e.Identity == s.Identity && e.PID == s.PID
	})
}

// nextStart waits for a command started by another supervisor than s's.
func (rc *RunCluster) nextStart(s checker.ChildEvent, timeout time.Duration) checker.ChildEvent {
	rc.t.Helper()
	return rc.awaitChild(timeout, "the next command's child_started", func(e checker.ChildEvent) bool {
		return e.Event.Event == checker.EventChildStarted && e.Identity != s.Identity && e.T.After(s.T)
	})
}

// grandchildOf waits for the grandchild of the command (identity, term) to
// report, and returns its pid.
func (rc *RunCluster) grandchildOf(s checker.ChildEvent) int {
	rc.t.Helper()
	a := rc.awaitActivity(10*time.Second, "the grandchild", func(a checker.Activity) bool {
		return a.Holder == s.Identity && a.Term == s.Term && a.What == "grandchild started"
	})
	return a.PID
}

// lastActivity is the time of pid's last report.
func (rc *RunCluster) lastActivity(pid int) time.Time {
	var last time.Time
	for _, a := range rc.Activity() {
		if a.PID == pid && a.At.After(last) {
			last = a.At
		}
	}
	return last
}

// The leader's command is SIGKILLed (the command only; it leaves a
// grandchild that ignores polite signals): its supervisor reaps it, kills
// and reaps the rest of its group, releases at once, and the standby's
// command starts within the fast bound (CheckCommands' L1-commands).
func commandKilled(t *testing.T, rc *RunCluster) []checker.Exception {
	_, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	if err := syscall.Kill(started.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exited := rc.exitOf(started, 10*time.Second)
	if exited.Signal != "SIGKILL" || exited.Cause != "exited" {
		t.Fatalf("child_exited %s: want signal SIGKILL, cause exited", exited.Raw)
	}
	if chaos.ProcAlive(gc) {
		t.Errorf("the command's grandchild %d still runs after child_exited", gc) // and let the checker judge too
	}
	next := rc.nextStart(started, 10*time.Second)
	t.Logf("command SIGKILLed; the next command started %v after its reaped exit", next.T.Sub(exited.T).Round(time.Millisecond))
	return nil
}

// The command exits on its own, with 0 and with 3: each exit hands over at
// once, and the exit code is in the history. (3 s of life leaves the
// standby, started after the first append, time to be polling: a hand-over
// needs someone to hand over to.)
func commandExits(t *testing.T, rc *RunCluster) []checker.Exception {
	_, _, started := firstCommand(t, rc, []string{"--exit-after", "3s", "--exit-code", "0"}, []string{"--exit-after", "3s", "--exit-code", "3"})
	rc.exitOf(started, 10*time.Second)
	for _, code := range []int{0, 3} {
		e := rc.awaitChild(20*time.Second, fmt.Sprintf("a command exiting %d on its own", code), func(e checker.ChildEvent) bool {
			return e.Event.Event == checker.EventChildExited && e.Cause == "exited" && e.ExitCode != nil && *e.ExitCode == code
		})
		rc.nextStart(checker.ChildEvent{Event: checker.Event{Identity: e.Identity, T: e.T}}, 10*time.Second)
	}
	return nil
}

// The command ignores SIGTERM and leaves a grandchild in its group that
// ignores every polite signal. The supervisor is stopped (SIGTERM): both
// must be dead and reaped before the standby's command starts.
func commandIgnoresTerm(t *testing.T, rc *RunCluster) []checker.Exception {
	leader, _, started := firstCommand(t, rc, []string{"--ignore-term", "--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	inject(t, rc, &chaos.Stop{}, leader)
	exited := rc.exitOf(started, 10*time.Second)
	next := rc.nextStart(started, 10*time.Second)
	if exited.Signal != "SIGKILL" || exited.Cause != "shutdown" {
		t.Fatalf("child_exited %s: want signal SIGKILL (it ignores SIGTERM), cause shutdown", exited.Raw)
	}
	if chaos.ProcAlive(gc) || chaos.ProcAlive(started.PID) {
		t.Fatalf("command %d or its grandchild %d still runs after its supervisor stopped", started.PID, gc)
	}
	if last := rc.lastActivity(gc); !last.Before(next.T) {
		t.Fatalf("the grandchild %d reported at %s, not before the next command started at %s", gc, last.Format(time.RFC3339Nano), next.T.Format(time.RFC3339Nano))
	}
	return nil
}

// The supervisor is SIGKILLed: its command dies with it (parent-death
// signal), and so does the grandchild it left in its group (the guard);
// nobody releases, so the standby waits out the lease.
func supervisorKilled(t *testing.T, rc *RunCluster) []checker.Exception {
	leader, _, started := firstCommand(t, rc, []string{"--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	inject(t, rc, &chaos.Crash{}, leader)
	killed := time.Now()
	awaitGone(t, rc.Local, fmt.Sprintf("the command's group (command %d, grandchild %d) after its supervisor's SIGKILL", started.PID, gc),
		killed, checker.GuardKillWindow, started.PID, gc)
	next := rc.nextStart(started, takeover(rc.Params()))
	// The last renew was at most a renew interval (plus its request) before
	// the kill; the lease cannot have been free earlier.
	p := rc.Params()
	if floor := p.LeaseDuration - p.RenewInterval - p.RequestTimeout(); next.T.Sub(killed) < floor {
		t.Fatalf("the next command started %v after the kill, before the lease could expire (≥ %v): was the lease released?", next.T.Sub(killed), floor)
	}
	t.Logf("supervisor SIGKILLed; the next command started %v later (lease %v)", next.T.Sub(killed).Round(time.Millisecond), p.LeaseDuration)
	return nil
}

// The supervisor is cut off from storage: at its renew deadline it stops its
// command (which ignores SIGTERM and has a grandchild: SIGKILL after
// --kill-grace), dead and reaped before the lease can expire at storage,
// so before the standby's command starts.
func supervisorPartitioned(t *testing.T, rc *RunCluster) []checker.Exception {
	leader, _, started := firstCommand(t, rc, []string{"--ignore-term", "--grandchild"}, nil)
	gc := rc.grandchildOf(started)
	inject(t, rc, &chaos.Partition{}, leader)
	exited := rc.exitOf(started, takeover(rc.Params()))
	if exited.Cause != "leadership_ended" || exited.Signal != "SIGKILL" {
		t.Fatalf("child_exited %s: want cause leadership_ended, signal SIGKILL", exited.Raw)
	}
	if chaos.ProcAlive(gc) {
		t.Fatalf("grandchild %d still runs after child_exited", gc)
	}
	next := rc.nextStart(started, takeover(rc.Params()))
	if !exited.T.Before(next.T) {
		t.Fatalf("the partitioned supervisor's command was reaped at %s, not before the next started at %s", exited.T, next.T)
	}
	t.Logf("partitioned: command reaped %v before the next command started", next.T.Sub(exited.T).Round(time.Millisecond))
	return nil
}

// The supervisor and its command are frozen together (a frozen VM) past the
// lease: every process of the host — the command's group, its shim, the
// group guard and the supervisor — stops at once; the standby's command
// fences the ledger. They are thawed in the worst order, the command first:
// the supervisor (and the guard and shim, which hold the same deadline)
// must kill it at once (the freeze rule), and whatever it writes meanwhile
// is refused (S2).
func frozenTogether(t *testing.T, rc *RunCluster) []checker.Exception {
	leader, _, started := firstCommand(t, rc, nil, nil)
	helpers := supervisorHelpers(t, leader)
	pause := &chaos.Pause{}
	frozen, err := freezeGroup(started.PID, helpers)
	if err != nil {
		t.Fatal(err)
	}
	freeze := checker.Fault{Kind: checker.FaultFreeze, Target: leader.Identity(), Start: frozen}
	inject(t, rc, pause, leader)
	next := rc.nextStart(started, takeover(rc.Params()))
	rc.awaitActivity(10*time.Second, "the next command's first append", func(a checker.Activity) bool {
		return a.Holder == next.Identity && strings.HasPrefix(a.What, "append ok")
	})
	freeze.End = time.Now()
	if err := syscall.Kill(-started.PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	remove(t, rc, pause)
	for _, pid := range helpers {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Fatal(err)
		}
	}
	rc.freezes = append(rc.freezes, freeze)
	exited := rc.exitOf(started, 10*time.Second)
	t.Logf("thawed command first; its supervisor reaped it %v after the thaw", exited.T.Sub(freeze.End).Round(time.Millisecond))
	return nil
}

// freezeGroup stops process group pgid and the processes pids (SIGSTOP)
// and returns the instant the freeze holds: once /proc shows every one of
// them stopped, when nothing of theirs can run any more. The command
// checker ends a frozen command's lifetime there (checker.FaultFreeze). A
// clock read before the signals precedes the stop by however long the
// harness itself then waits for a CPU: under load the command stamped a
// ledger entry 76 ms after such an instant.
func freezeGroup(pgid int, pids []int) (time.Time, error) {
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		return time.Time{}, err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return time.Time{}, err
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if allStopped(append(groupMembers(pgid), pids...)) {
			return time.Now(), nil
		}
		if time.Now().After(deadline) { // a wait with a deadline: the kernel stops a signalled process at once
			return time.Time{}, fmt.Errorf("process group %d and %v not all stopped 10 s after SIGSTOP", pgid, pids)
		}
	}
}

// allStopped reports whether every thread of every pid is stopped, or
// gone: a process's own state is its main thread's, and its other threads
// stop each on its own way out of the kernel.
func allStopped(pids []int) bool {
	for _, pid := range pids {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			continue // gone
		}
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			i := bytes.LastIndexByte(b, ')')
			if err != nil || i < 0 || i+2 >= len(b) {
				continue // gone
			}
			if st := b[i+2]; st != 'T' && st != 't' && st != 'Z' && st != 'X' {
				return false
			}
		}
	}
	return true
}

// groupMembers lists the processes of process group pgid (/proc).
func groupMembers(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 {
			continue
		}
		// After the name: state, ppid, pgrp.
		if f := strings.Fields(string(b[i+1:])); len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// supervisorHelpers are the pids of a supervisor's group guard and command
// shim: the processes besides the supervisor and the command that a frozen
// host freezes too.
func supervisorHelpers(t *testing.T, w cluster.Worker) []int {
	t.Helper()
	pp, ok := w.(chaos.PIDProcess)
	if !ok {
		t.Fatalf("%s has no pid to find its guard and shim by", w.Identity())
	}
	var pids []int
	for _, name := range []string{supervise.GuardName, supervise.ShimName} {
		pid, err := chaos.ChildNamed(pp.Pid(), name)
		if err != nil {
			t.Fatalf("%s of %s: %v", name, w.Identity(), err)
		}
		pids = append(pids, pid)
	}
	return pids
}
