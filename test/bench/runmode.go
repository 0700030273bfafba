package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/scenarios"
	"github.com/blobleader/blobleader/worker/supervise"
)

// CommandTrial is one measured command-crash failover in run mode.
type CommandTrial struct {
	Leader    string  `json:"leader"`
	NewLeader string  `json:"new_leader"`
	FromKill  float64 `json:"from_kill_s"` // SIGKILL of the command → the next command's child_started
	FromExit  float64 `json:"from_exit_s"` // its reaped child_exited → the next command's child_started
}

// RunModeResult is the run-mode phase: command-crash failover of
// `blobleader run` and the supervisor's footprint while its command runs.
type RunModeResult struct {
	Job        string         `json:"job"`
	Trials     []CommandTrial `json:"trials"`
	RSSBytes   int64          `json:"supervisor_rss_bytes"`   // VmRSS of the leading supervisor at the end of the window
	GuardRSS   int64          `json:"guard_rss_bytes"`        // VmRSS of its group guard (a second process; 0 if none found)
	CPUPercent float64        `json:"supervisor_cpu_percent"` // its utime + stime over the window, % of one core
	WindowS    float64        `json:"window_s"`
	Violations map[string]int `json:"violations"` // Check and CheckCommands, by invariant
	Err        string         `json:"error,omitempty"`
}

// runModeCommand is what the supervisors run: a process that does nothing,
// so the footprint measured is the supervisor's own.
var runModeCommand = []string{"sleep", "86400"}

// RunModeRun starts three `blobleader run` supervisors of runModeCommand,
// measures the leading supervisor's RSS and CPU over window, then n times:
// waits a random 0.5 s + U(0, 1 s) (a random phase against the followers'
// polls), SIGKILLs the running command (the command only, not its
// supervisor), and waits for its reaped exit and the next command's start.
// The checker judges the supervisors and the commands afterwards.
func RunModeRun(t testing.TB, env Env, fl Flavor, n int, window time.Duration, job string) RunModeResult {
	out := RunModeResult{Job: job, Violations: map[string]int{}, WindowS: window.Seconds()}
	c := startCluster(t, fl, 3, cluster.RunCommand(runModeCommand...))
	start := time.Now()
	wait := fl.crashBound() + 20*time.Second

	// 1. Footprint: the leader while its command runs.
	cur := awaitRunning(t, c, wait, 0)
	sup, err := FindWorker(c.Dir(), cur.Identity)
	if err != nil {
		t.Fatal(err)
	}
	cpu0, err := CPUSeconds(sup.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	env.sleep(t, window)
	cpu1, err1 := CPUSeconds(sup.Pid)
	rss, err2 := RSSBytes(sup.Pid)
	if err := firstErr(err1, err2); err != nil {
		t.Fatal(err)
	}
	out.CPUPercent = (cpu1 - cpu0) / time.Since(t0).Seconds() * 100
	out.RSSBytes = rss
	if gp, err := childNamed(sup.Pid, supervise.GuardName); err == nil {
		out.GuardRSS, _ = RSSBytes(gp)
	}
	env.Progress(fmt.Sprintf("%s: supervisor %s RSS %s, CPU %.2f %% over %v", job, cur.Identity, mib(rss), out.CPUPercent, window))

	// 2. Command crashes.
	for i := 1; i <= n; i++ {
		cur = awaitRunning(t, c, wait, 0)
		env.sleep(t, 500*time.Millisecond+time.Duration(env.Rand.Int64N(int64(time.Second))))
		kill := time.Now()
		if err := syscall.Kill(cur.PID, syscall.SIGKILL); err != nil {
			t.Fatalf("trial %d: kill command %d of %s: %v", i, cur.PID, cur.Identity, err)
		}
		exited := awaitChild(t, c, 20*time.Second, fmt.Sprintf("child_exited of %d", cur.PID), func(e checker.ChildEvent) bool {
			return e.Event.Event == checker.EventChildExited && e.Identity == cur.Identity && e.PID == cur.PID
		})
		next := awaitRunning(t, c, wait, cur.PID)
		tr := CommandTrial{Leader: cur.Identity, NewLeader: next.Identity, FromKill: next.T.Sub(kill).Seconds(), FromExit: next.T.Sub(exited.T).Seconds()}
		out.Trials = append(out.Trials, tr)
		env.Progress(fmt.Sprintf("%s: command crash %d/%d: %s → %s, %.3f s from SIGKILL", job, i, n, tr.Leader, tr.NewLeader, tr.FromKill))
	}

	// 3. Verdicts.
	run, res := judge(t, c, fl, start)
	run.End = time.Now() // the commands still run: their run ends after the read
	cres, err := checker.CheckCommands(checker.CommandRun{Run: run}, checker.CommandParams{Params: scenarios.CheckerParams(fl.Params)})
	if err != nil {
		t.Fatalf("check commands: %v", err)
	}
	countViolations(out.Violations, nil, checker.Compose(res.Verdict, cres.Verdict))
	return out
}

// children are the child_started and child_exited events of c's histories.
func children(t testing.TB, c *cluster.Local) []checker.ChildEvent {
	evs, err := checker.ReadWrittenHistory(c.HistoryFiles()...)
	if err != nil {
		t.Fatalf("read histories: %v", err)
	}
	out, err := checker.ChildEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func awaitChild(t testing.TB, c *cluster.Local, timeout time.Duration, what string, pred func(checker.ChildEvent) bool) checker.ChildEvent {
	return await(t, timeout, what, func() []checker.ChildEvent { return children(t, c) }, pred)
}

// awaitRunning waits for a command that has started and not exited, other
// than pid not (0: any), and returns its child_started.
func awaitRunning(t testing.TB, c *cluster.Local, timeout time.Duration, not int) checker.ChildEvent {
	return awaitCommand(t, c, timeout, fmt.Sprintf("running command (other than %d)", not), func(e checker.ChildEvent) bool { return e.PID != not })
}

// awaitCommand waits for a command that has started and not exited (by the
// histories) and that accept takes, and returns its child_started.
func awaitCommand(t testing.TB, c *cluster.Local, timeout time.Duration, what string, accept func(checker.ChildEvent) bool) checker.ChildEvent {
	deadline := time.Now().Add(timeout)
	for {
		running := map[string]checker.ChildEvent{}
		for _, e := range children(t, c) {
			k := fmt.Sprintf("%s/%d", e.Identity, e.PID)
			if e.Event.Event == checker.EventChildStarted {
				running[k] = e
			} else {
				delete(running, k)
			}
		}
		for _, e := range running {
			if accept(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// childNamed finds a child of parent whose argv[0] is name.
func childNamed(parent int, name string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); argv0 != name {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 1 && f[1] == strconv.Itoa(parent) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("bench: no child %q of %d", name, parent)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TargetCommandCrashP99 is run mode's target (docs/benchmarks.md#targets):
// command death → next command, p99, at the defaults.
const TargetCommandCrashP99 = 1.5 // s

// CommandTrials gathers the run-mode trials of every run-mode job.
func (r Results) CommandTrials() (fromKill, fromExit []float64) {
	for _, m := range r.RunMode {
		for _, t := range m.Trials {
			fromKill = append(fromKill, t.FromKill)
			fromExit = append(fromExit, t.FromExit)
		}
	}
	return fromKill, fromExit
}

// runModeView is run mode's command-crash section (runmode.md.tmpl).
type runModeView struct {
	Command            string // what the supervisors run
	FromKill, FromExit Stats  // SIGKILL of the command, its reaped exit → the next command
	InProcess          Stats  // §1's crash of ours from SIGKILL, same invocation (N 0 if not run)
	Target             float64
	Jobs               []RunModeResult
}

// RunModeView is the run-mode section, nil without run-mode jobs.
func (d *benchDoc) RunModeView() *runModeView {
	if len(d.RunMode) == 0 {
		return nil
	}
	return &runModeView{Command: strings.Join(runModeCommand, " "), FromKill: d.Commands.FromKill, FromExit: d.Commands.FromExit,
		InProcess: d.O.CrashFromKill, Target: TargetCommandCrashP99, Jobs: d.RunMode}
}
