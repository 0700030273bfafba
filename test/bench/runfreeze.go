package bench

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// FreezeTrial is one supervisor frozen alone (SIGSTOP to its pid) while its
// command runs, at a random point of its renew cycle.
type FreezeTrial struct {
	Leader     string  `json:"leader"`
	PhaseS     float64 `json:"phase_s"`       // the freeze's offset after the supervisor's last renewed event
	FreezeDead float64 `json:"freeze_dead_s"` // SIGSTOP of the supervisor → its command dead (seen in /proc)
	DeadNext   float64 `json:"dead_next_s"`   // its command dead → the next command's child_started (negative: overlap)
	OverlapS   float64 `json:"overlap_s"`     // max(0, −DeadNext)
}

// RunModeFreezeRun starts three `blobleader run` supervisors of
// runModeCommand and n times: waits for a running command, waits a random
// U(0, renew interval) after its supervisor's last renew, SIGSTOPs the
// supervisor alone, watches /proc (every 5 ms) for the command's death (its
// guard's kill: a zombie runs nothing), waits for the next command's start,
// then SIGCONTs the frozen supervisor. The overlap is judged from /proc and
// the next child_started: the frozen supervisor's own child_exited comes
// only after its thaw.
func RunModeFreezeRun(t testing.TB, env Env, fl Flavor, n int, job string) ([]FreezeTrial, map[string]int) {
	c := startCluster(t, fl, 3, cluster.RunCommand(runModeCommand...))
	start := time.Now()
	wait := fl.crashBound() + 20*time.Second
	var trials []FreezeTrial
	for i := 1; i <= n; i++ {
		cur := awaitRunning(t, c, wait, 0)
		sup, err := FindWorker(c.Dir(), cur.Identity)
		if err != nil {
			t.Fatal(err)
		}
		last := lastRenewed(t, c, cur.Identity)
		phase := time.Duration(env.Rand.Int64N(int64(fl.Params.RenewInterval)))
		if d := time.Until(last.Add(phase)); d > 0 {
			env.sleep(t, d)
		}
		frozen := time.Now()
		if err := syscall.Kill(sup.Pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("trial %d: SIGSTOP supervisor %d: %v", i, sup.Pid, err)
		}
		var dead time.Time
		for deadline := frozen.Add(wait); dead.IsZero() && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if !chaos.ProcAlive(cur.PID) {
				dead = time.Now()
			}
		}
		next := awaitRunning(t, c, wait, cur.PID)
		_ = syscall.Kill(sup.Pid, syscall.SIGCONT)
		if dead.IsZero() {
			t.Fatalf("trial %d: command %d of frozen %s still ran %v after the freeze", i, cur.PID, cur.Identity, wait)
		}
		tr := FreezeTrial{Leader: cur.Identity, PhaseS: frozen.Sub(last).Seconds(), FreezeDead: dead.Sub(frozen).Seconds(), DeadNext: next.T.Sub(dead).Seconds()}
		tr.OverlapS = max(0, -tr.DeadNext)
		trials = append(trials, tr)
		env.Progress(fmt.Sprintf("%s: freeze %d/%d: %s frozen %.2f s after its renew; command dead %.3f s later, %.3f s before the next start", job, i, n, cur.Identity, tr.PhaseS, tr.FreezeDead, tr.DeadNext))
		awaitChild(t, c, 20*time.Second, fmt.Sprintf("child_exited of %d", cur.PID), func(e checker.ChildEvent) bool {
			return e.Event.Event == checker.EventChildExited && e.Identity == cur.Identity && e.PID == cur.PID
		})
	}
	_, res := judge(t, c, fl, start)
	violations := map[string]int{}
	countViolations(violations, nil, res.Verdict)
	return trials, violations
}

// lastRenewed is the time of identity's last started_leading or renewed.
func lastRenewed(t testing.TB, c *cluster.Local, identity string) time.Time {
	evs, err := checker.ReadWrittenHistory(c.HistoryFiles()...)
	if err != nil {
		t.Fatalf("read histories: %v", err)
	}
	var last time.Time
	for _, e := range evs {
		if e.Identity == identity && (e.Event == "renewed" || e.Event == "started_leading") && e.T.After(last) {
			last = e.T
		}
	}
	return last
}

// runFreezeView is the frozen-supervisor rows of the run-mode section.
type runFreezeView struct {
	FreezeDead, DeadNext, Overlap Stats
	Violations                    map[string]int
}

// RunFreezeView is the frozen-supervisor rows, nil without trials.
func (d *benchDoc) RunFreezeView() *runFreezeView {
	if len(d.RunFreeze) == 0 {
		return nil
	}
	return &runFreezeView{
		FreezeDead: Summarize(column(d.RunFreeze, func(t FreezeTrial) float64 { return t.FreezeDead })),
		DeadNext:   Summarize(column(d.RunFreeze, func(t FreezeTrial) float64 { return t.DeadNext })),
		Overlap:    Summarize(column(d.RunFreeze, func(t FreezeTrial) float64 { return t.OverlapS })),
		Violations: d.RunFreezeViolations,
	}
}
