package scenarios

import (
	"bufio"
	"encoding/json"
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

// The shim's death or stop, nested cgroups and runaway forks
// (docs/failover.md, "Commands"): every process on the safety path holds
// the lineage, whatever happens to the others. Each scenario runs its
// supervisors in a cgroup of their own (chaos.Confine), killed as a whole
// at the end, so that nothing a fault lets escape outlives the test; each
// chains two faults on two leaders, judged from the commands' own reports.
var (
	ShimKilledNestedThenNameStopped = CommandScenario{"ShimKilledNestedThenNameStopped", shimKilledNestedThenNameStopped}
	TreeModeLineage                 = CommandScenario{"TreeModeLineage", treeModeLineage}
	ShimStopped                     = CommandScenario{"ShimStopped", shimStopped}
)

// confine starts every supervisor of rc in a Confine of the test's (under
// the extra launch conditions), killed with everything in it at the
// test's end. It skips, naming why, where no cgroup can be made.
func (rc *RunCluster) confine(t *testing.T, extra ...chaos.Launch) *chaos.Confine {
	t.Helper()
	c, err := chaos.NewConfine(strings.ReplaceAll(t.Name(), "/", "_"))
	if err != nil {
		t.Skipf("these faults can let a process escape its supervisor; they run only confined in a cgroup of their own (root, cgroup v2 with cgroup.kill): %v", err)
	}
	t.Cleanup(func() {
		if err := c.Kill(10 * time.Second); err != nil {
			t.Errorf("confinement: %v", err)
		}
	})
	rc.opts = append(rc.opts, cluster.Launch(append(chaos.Launches{c}, extra...)))
	return c
}

// worker is the running supervisor of identity.
func (rc *RunCluster) worker(t *testing.T, identity string) cluster.Worker {
	t.Helper()
	for _, w := range rc.Workers() {
		if w.Identity() == identity {
			return w
		}
	}
	t.Fatalf("no worker %s", identity)
	return nil
}

// commandCgroup is the cgroup its supervisor's "command started" line names
// for the command pid ("" in tree mode).
func (rc *RunCluster) commandCgroup(t *testing.T, identity string, pid int) string {
	t.Helper()
	f, err := os.Open(filepath.Join(rc.Dir(), identity+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var l struct {
			Msg    string `json:"msg"`
			PID    int    `json:"pid"`
			Cgroup string `json:"cgroup"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "command started" && l.PID == pid {
			return l.Cgroup
		}
	}
	t.Fatalf("%s's log has no \"command started\" line for pid %d", identity, pid)
	return ""
}

// metric reads one unlabelled sample of w's /metrics (-1 when absent).
func metric(t *testing.T, w cluster.Worker, name string) float64 {
	t.Helper()
	p, ok := w.(cluster.Prober)
	if !ok {
		t.Fatalf("%s cannot be probed", w.Identity())
	}
	_, body, err := p.Probe(ctxFor(t, 5*time.Second), "/metrics")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return -1
}

// Cgroup mode. 1. The leader's shim is SIGKILLed after the command's other
// processes (a daemonized manager in a session of its own and the manager's
// jobs, none in the command's process group) were moved into a child cgroup
// of the command's cgroup: the
// supervisor must take the whole subtree (the grandchild dead before the
// next command starts) and leave no cgroup of its behind. 2. `killall
// -STOP blobleader` on the next leader's host, held past the lease: the
// guard and the shim, which are not named blobleader, hold the deadline, so
// the command dies by it, before the next command starts.
func shimKilledNestedThenNameStopped(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.confine(t)
	leader, _, started := firstCommand(t, rc, []string{"--manager"}, []string{"--grandchild"})
	rc.Supervise(1, "--grandchild")
	manager := rc.awaitActivity(10*time.Second, "the command's manager", func(a checker.Activity) bool {
		return a.Holder == started.Identity && a.Term == started.Term && a.What == "manager started"
	}).PID
	rc.awaitActivity(10*time.Second, "a job of the manager", func(a checker.Activity) bool {
		return a.Holder == started.Identity && a.Term == started.Term && a.What == "job started"
	})
	cg := rc.commandCgroup(t, started.Identity, started.PID)
	if cg == "" {
		t.Skipf("%s runs its command in tree mode here (no writable cgroup v2): nothing to nest", started.Identity)
	}
	sk := &chaos.ShimKill{Nest: true}
	inject(t, rc, sk, leader)
	killed := time.Now()
	// Its supervisor stops what is left (SIGTERM, --kill-grace 1 s, SIGKILL).
	took, next := rc.handedOver(t, started, manager, killed, time.Second+supervise.KillTimeout)
	exited := rc.exitOf(started, 10*time.Second)
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Errorf("%s's command cgroup %s is still there after child_exited (err %v): left behind", started.Identity, cg, err)
	}
	t.Logf("shim SIGKILLed with manager %d and its jobs (pids %v) in nested cgroup %s: dead %v after, child_exited cause %s, next command %v after the kill",
		manager, sk.Moved, filepath.Base(sk.Nested), took.Round(time.Millisecond), exited.Cause, next.T.Sub(killed).Round(time.Millisecond))

	// 2. killall -STOP blobleader on the next leader's host.
	w := rc.worker(t, next.Identity)
	gc2 := rc.grandchildOf(next)
	ns := &chaos.NameStop{Name: "blobleader"}
	inject(t, rc, ns, w)
	stopped := time.Now()
	took2, next2 := rc.handedOver(t, next, gc2, stopped, takeover(rc.Params()))
	remove(t, rc, ns)
	t.Logf("killall -STOP blobleader stopped pids %v of %s: its command dead %v after, the next command (%s) %v after",
		ns.Stopped, next.Identity, took2.Round(time.Millisecond), next2.Identity, next2.T.Sub(stopped).Round(time.Millisecond))
	return nil
}

// Tree mode (no cgroup v2 in the supervisors' mount namespace). 1. The
// leader's command starts a fork-walker (fork, setsid, exit, a hop every
// few ms), then its supervisor is SIGKILLed: the shim must kill until its
// lineage is provably empty, not stop after a scan that found nothing. 2.
// The next leader's command runs a daemonized manager that starts a job
// every second, and a walker; its supervisor is frozen, then its shim
// SIGKILLed: the lineage, now below the frozen supervisor, must still die
// by the deadline (the guard), jobs started after the shim died included.
func treeModeLineage(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.confine(t, &chaos.NoCgroup{})
	flags := []string{"--grandchild", "--manager"}
	leader, _, started := firstCommand(t, rc, flags, flags)
	rc.Supervise(1, flags...)
	if cg := rc.commandCgroup(t, started.Identity, started.PID); cg != "" {
		t.Fatalf("%s's command runs in cgroup %s under chaos.NoCgroup: want tree mode", started.Identity, cg)
	}
	gc := rc.grandchildOf(started)
	rc.walker(t, started)
	killed := time.Now()
	inject(t, rc, &chaos.Crash{}, leader)
	took, next := rc.handedOver(t, started, gc, killed, guardKillBound)
	t.Logf("tree mode, walker, supervisor SIGKILLed: command, grandchild and walker silent %v after; next command %v after the kill",
		took.Round(time.Millisecond), next.T.Sub(killed).Round(time.Millisecond))

	// 2. Frozen, then its shim killed.
	w := rc.worker(t, next.Identity)
	gc2 := rc.grandchildOf(next)
	rc.awaitActivity(10*time.Second, "a job of the manager", func(a checker.Activity) bool {
		return a.Holder == next.Identity && a.Term == next.Term && a.What == "job started"
	})
	rc.walker(t, next)
	freeze := &chaos.SupervisorFreeze{}
	inject(t, rc, freeze, w)
	frozen := time.Now()
	inject(t, rc, &chaos.ShimKill{}, w)
	took2, next2 := rc.handedOver(t, next, gc2, frozen, takeover(rc.Params()))
	remove(t, rc, freeze)
	jobs := 0
	for _, a := range rc.Activity() {
		if a.Holder == next.Identity && a.Term == next.Term && a.What == "job started" && a.At.After(frozen) {
			jobs++
		}
	}
	if jobs == 0 {
		t.Errorf("the manager of %s's command started no job after the freeze: the test shows nothing", next.Identity)
	}
	t.Logf("tree mode, supervisor frozen then its shim SIGKILLed: %d job(s) started after; command, jobs and walker dead %v after the freeze; next command %v after",
		jobs, took2.Round(time.Millisecond), next2.T.Sub(frozen).Round(time.Millisecond))
	return nil
}

// walker makes the command started as s start a fork-walker and waits for
// its first report.
func (rc *RunCluster) walker(t *testing.T, s checker.ChildEvent) {
	t.Helper()
	inject(t, rc, &chaos.ForkWalker{PID: s.PID, Name: s.Identity}, nil)
	rc.awaitActivity(10*time.Second, "the walker's first report", func(a checker.Activity) bool {
		return a.Holder == s.Identity && a.Term == s.Term && strings.HasPrefix(a.What, "walker alive")
	})
}

// Tree mode (in cgroup mode the cgroup.kill of a stop takes the stopped
// shim too). 1. The leader's shim is stopped, then its command crashes:
// the supervisor must notice within a bound, report the command gone
// (blobleader_child_running 0), stop believing in it and step down within
// the lease + 5 s, so another host runs the command. 2. The next leader's
// shim is stopped, then its supervisor gets an ordinary SIGTERM: it must
// still stop its command and release, so the hand-over is at once. 3. The
// next leader's guard is stopped, then SIGTERM: the same (the group's end
// waits for the guard's exit, which a stopped guard never makes).
func shimStopped(t *testing.T, rc *RunCluster) []checker.Exception {
	rc.confine(t, &chaos.NoCgroup{})
	next := shimStoppedThenCrash(t, rc)
	// Judged on the release and on the commands' own reports (the shim,
	// continued, reaps the lineage before the release, so the old command
	// cannot outlive it).
	gc := rc.grandchildOf(next)
	next2 := stoppedThenTerm(t, rc, next, &chaos.ShimStop{}, "its shim stopped")
	if chaos.ProcAlive(gc) {
		t.Errorf("%s's grandchild %d outlived its supervisor's end", next.Identity, gc)
	}
	gs := &chaos.GuardStop{}
	stoppedThenTerm(t, rc, next2, gs, "its guard stopped")
	if chaos.ProcAlive(gs.Guard) {
		t.Errorf("%s's guard %d outlived its supervisor's end (stopped: never continued nor killed)", next2.Identity, gs.Guard)
	}
	return nil
}

// shimStoppedThenCrash is shimStopped's first phase; it returns the next
// command's start.
func shimStoppedThenCrash(t *testing.T, rc *RunCluster) checker.ChildEvent {
	t.Helper()
	p := rc.Params()
	leader, _, started := firstCommand(t, rc, nil, []string{"--grandchild"})
	rc.Supervise(1, "--grandchild")
	ss := &chaos.ShimStop{}
	inject(t, rc, ss, leader)
	if err := syscall.Kill(started.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	crashed := time.Now()
	// The command is dead (a zombie of the stopped shim): nothing runs.
	for v := metric(t, leader, "blobleader_child_running"); v != 0; v = metric(t, leader, "blobleader_child_running") {
		if time.Since(crashed) > p.RenewInterval+time.Second {
			t.Errorf("blobleader_child_running is %v %v after the command died under a stopped shim, want 0", v, time.Since(crashed).Round(time.Millisecond))
			break
		}
		hold(t, 50*time.Millisecond)
	}
	bound := p.LeaseDuration + 5*time.Second
	var exited checker.ChildEvent
	for deadline := crashed.Add(bound); exited.Event.Event == ""; hold(t, 50*time.Millisecond) {
		for _, e := range rc.children() {
			if e.Event.Event == checker.EventChildExited && e.Identity == started.Identity && e.PID == started.PID {
				exited = e
			}
		}
		if exited.Event.Event == "" && time.Now().After(deadline) {
			t.Errorf("%s still holds leadership for its crashed command %v after the crash, with its shim stopped (bound: lease + 5 s = %v)",
				started.Identity, time.Since(crashed).Round(time.Millisecond), bound)
			break
		}
	}
	next := rc.nextStart(started, takeover(p))
	remove(t, rc, ss)
	if exited.Event.Event != "" && exited.Cause != "shim_lost" {
		t.Errorf("child_exited %s: want cause shim_lost", exited.Raw)
	}
	if code, _, err := leader.(cluster.Prober).Probe(observe(t), "/healthz"); err != nil || code != 200 {
		t.Errorf("%s's /healthz after it stepped down: %d, %v; want 200 (it recovered by itself)", started.Identity, code, err)
	}
	t.Logf("shim stopped, command crashed: stepped down %v after the crash (child_exited %v), next command %v after",
		exited.T.Sub(crashed).Round(time.Millisecond), exited.Cause, next.T.Sub(crashed).Round(time.Millisecond))
	return next
}

// stoppedThenTerm puts f (a stop of one of the supervisor's helpers) on the
// supervisor of s's command, then SIGTERMs it: it must still stop its
// command and release within the shutdown bound, and its command must not
// report after the next one's first report. It returns the next command's
// start.
func stoppedThenTerm(t *testing.T, rc *RunCluster, s checker.ChildEvent, f chaos.Fault, what string) checker.ChildEvent {
	t.Helper()
	p := rc.Params()
	w := rc.worker(t, s.Identity)
	inject(t, rc, f, w)
	term := time.Now()
	inject(t, rc, &chaos.Stop{}, w)
	rel, ok := awaitEvent(t, rc, p.ShutdownGrace+supervise.KillTimeout+slack, func(e checker.Event) bool {
		return e.Identity == s.Identity && e.Event == "released" && e.T.After(term)
	})
	if !ok {
		t.Errorf("%s, %s, did not release the lease on SIGTERM", s.Identity, what)
	}
	next := rc.nextStart(s, takeover(p))
	rc.awaitActivity(10*time.Second, "the next command's first report", func(a checker.Activity) bool {
		return a.Holder == next.Identity && a.Term == next.Term
	})
	if ov := commandOverlap(rc, s, next); ov > 0 {
		t.Errorf("%s's command reported for %v after the next command's first report", s.Identity, ov.Round(time.Millisecond))
	}
	remove(t, rc, f)
	if ok {
		t.Logf("%s, then SIGTERM: released %v after it, next command %v after the SIGTERM",
			what, rel.T.Sub(term).Round(time.Millisecond), next.T.Sub(term).Round(time.Millisecond))
	}
	return next
}
