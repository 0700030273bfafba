package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// RunFault is one host-side fault on a `blobleader run` supervisor whose
// command runs (docs/failover.md, "Commands"): a condition of its output or
// start (Output, Launch), then a trigger that takes the supervisor away
// (Trigger: "freeze", "kill" or "stop").
type RunFault struct {
	Name    string
	Output  string // "", "reader-gone" (chaos.OutputReaderGone), "blocked" (chaos.BlockedOutput)
	Launch  func(t testing.TB) chaos.Launch
	Guard   bool   // SIGKILL the guard alone first (chaos.GuardKill)
	Trigger string // "freeze" (SupervisorFreeze), "kill" (Crash), "stop" (Stop)
}

// RunFaults are the faults `make bench` measures beside the frozen
// supervisor.
var RunFaults = []RunFault{
	{Name: "output reader gone, then SIGTERM", Output: "reader-gone", Trigger: "stop"},
	{Name: "output reader gone, then SIGKILL", Output: "reader-gone", Trigger: "kill"},
	{Name: "output a full pipe, supervisor frozen", Output: "blocked", Trigger: "freeze"},
	{Name: "output a full pipe, supervisor SIGKILLed", Output: "blocked", Trigger: "kill"},
	{Name: "output on /dev/full, supervisor frozen", Launch: func(testing.TB) chaos.Launch { return &chaos.FullOutput{} }, Trigger: "freeze"},
	{Name: "guard SIGKILLed, then supervisor frozen", Guard: true, Trigger: "freeze"},
	{Name: "clone3 refused, supervisor SIGKILLed", Launch: func(t testing.TB) chaos.Launch {
		return &chaos.NoClone3{Helper: cluster.NoClone3Binary(t)}
	}, Trigger: "kill"},
}

// FaultTrial is one measured RunFault.
type FaultTrial struct {
	Fault     string  `json:"fault"`
	Leader    string  `json:"leader"`
	FaultDead float64 `json:"fault_dead_s"` // the trigger → the old command and its grandchild dead (seen in /proc, polled every 5 ms)
	OverlapS  float64 `json:"overlap_s"`    // the old command's last report after the next command's first (its own timestamps; 0: none)
}

// RunModeFaultRun starts three supervisors of test/cmd/ledgercmd (with a
// grandchild that ignores polite signals and reports every 50 ms) under f,
// and n times: waits for a running command, a random U(0, renew interval),
// puts f on its supervisor, watches /proc for the command's and the
// grandchild's death, waits for the next command and its first report plus
// a second, reads the overlap from the commands' own reports, then heals
// (thaw, unblock, restart).
func RunModeFaultRun(t testing.TB, env Env, fl Flavor, f RunFault, n int, job string) []FaultTrial {
	c := newCluster(t, fl)
	activity := filepath.Join(c.Dir(), "activity.jsonl")
	cmd := []string{cluster.LedgerCommandBinary(t), "--connection-string", c.DirectConnectionString(), "--container", c.ContainerName(),
		"--blob", "leader-cmd", "--activity", activity, "--interval", "100ms", "--grandchild"}
	opts := []cluster.Option{cluster.RunCommand(cmd...)}
	if f.Output != "" {
		opts = append(opts, cluster.BlockableOutput())
	}
	if f.Launch != nil {
		opts = append(opts, cluster.Launch(f.Launch(t)))
	}
	startWorkers(t, c, fl, 3, 2*time.Minute, opts...)
	wait := fl.crashBound() + 20*time.Second
	var trials []FaultTrial
	ended := map[int]bool{}
	for i := 1; i <= n; i++ {
		cur := awaitLive(t, c, wait, ended)
		ended[cur.PID] = true
		gc := awaitActivity(t, activity, 10*time.Second, "a grandchild of "+cur.Identity+"'s command", func(a checker.Activity) bool {
			return a.Holder == cur.Identity && a.Term == cur.Term && a.What == "grandchild started"
		}).PID
		env.sleep(t, time.Duration(env.Rand.Int64N(int64(fl.Params.RenewInterval))))
		w := workerNamed(t, c, cur.Identity)
		at, heal := injectRunFault(t, c, f, w)
		var dead time.Time
		for deadline := at.Add(wait); dead.IsZero() && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if !chaos.ProcAlive(cur.PID) && !chaos.ProcAlive(gc) {
				dead = time.Now()
			}
		}
		next := awaitLive(t, c, wait, ended)
		first := awaitFirstReport(t, activity, next.Identity, next.Term, 10*time.Second)
		env.sleep(t, time.Second) // 20 more of the grandchild's reports
		_, last := reportSpan(t, activity, cur.Identity, cur.Term)
		tr := FaultTrial{Fault: f.Name, Leader: cur.Identity, OverlapS: max(0, last.Sub(first).Seconds())}
		if dead.IsZero() {
			tr.FaultDead = wait.Seconds()
			t.Errorf("trial %d: %s's command %d or grandchild %d still ran %v after %s", i, cur.Identity, cur.PID, gc, wait, f.Name)
		} else {
			tr.FaultDead = dead.Sub(at).Seconds()
		}
		trials = append(trials, tr)
		env.Progress(fmt.Sprintf("%s: %d/%d: %s: command dead %.3f s after the fault, overlap %.3f s", job, i, n, cur.Identity, tr.FaultDead, tr.OverlapS))
		heal()
	}
	return trials
}

// injectRunFault puts f on w and returns when its trigger was sent (before
// Inject, which returns once it took effect) and what heals it.
func injectRunFault(t testing.TB, c *cluster.Local, f RunFault, w cluster.Worker) (time.Time, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var faults []chaos.Fault
	put := func(ft chaos.Fault) {
		if err := c.Inject(ctx, ft, w); err != nil {
			t.Fatalf("inject %s on %s: %v", ft.Kind(), w.Identity(), err)
		}
		faults = append(faults, ft)
	}
	switch f.Output {
	case "reader-gone":
		put(&chaos.OutputReaderGone{})
	case "blocked":
		put(&chaos.BlockedOutput{})
	}
	if f.Guard {
		put(&chaos.GuardKill{})
	}
	at := time.Now()
	switch f.Trigger {
	case "freeze":
		put(&chaos.SupervisorFreeze{})
	case "kill":
		put(&chaos.Crash{})
	case "stop":
		put(&chaos.Stop{})
	}
	return at, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i := len(faults) - 1; i >= 0; i-- {
			if err := c.Remove(ctx, faults[i]); err != nil {
				t.Fatalf("remove %s: %v", faults[i].Kind(), err)
			}
		}
		if p, ok := w.(chaos.Process); ok && !w.Running() {
			if err := p.Restart(ctx); err != nil {
				t.Fatalf("restart %s: %v", w.Slot(), err)
			}
		}
	}
}

// awaitLive waits for a command that has started, has not exited, runs
// (in /proc: a killed supervisor writes no child_exited), and is not one of
// ended, and returns its child_started.
func awaitLive(t testing.TB, c *cluster.Local, timeout time.Duration, ended map[int]bool) checker.ChildEvent {
	return awaitCommand(t, c, timeout, "running command", func(e checker.ChildEvent) bool { return !ended[e.PID] && chaos.ProcAlive(e.PID) })
}

// runFaultsView is the host-side fault rows of the run-mode section, one
// per RunFaults entry that was measured.
type runFaultsView struct{ Rows []runFaultRow }

type runFaultRow struct {
	Name        string
	Dead        Stats   // the trigger → the old command dead
	MaxOverlap  float64 // the longest overlap of the commands' own reports
	WithOverlap int     // runs with any overlap
}

// RunFaultsView is the host-side fault rows, nil without trials.
func (d *benchDoc) RunFaultsView() *runFaultsView {
	if len(d.RunFaults) == 0 {
		return nil
	}
	v := &runFaultsView{}
	for _, f := range RunFaults {
		var dead []float64
		row := runFaultRow{Name: f.Name}
		for _, tr := range d.RunFaults {
			if tr.Fault != f.Name {
				continue
			}
			dead = append(dead, tr.FaultDead)
			row.MaxOverlap = max(row.MaxOverlap, tr.OverlapS)
			if tr.OverlapS > 0 {
				row.WithOverlap++
			}
		}
		if len(dead) > 0 {
			row.Dead = Summarize(dead)
			v.Rows = append(v.Rows, row)
		}
	}
	return v
}
