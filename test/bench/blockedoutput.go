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
	"github.com/blobleader/blobleader/test/scenarios"
)

// BlockedOutputTrial is one leadership ended with (or, for the baseline,
// without) the supervisor's stdout/stderr a full pipe nobody reads.
type BlockedOutputTrial struct {
	Blocked bool   `json:"blocked"` // output blocked (false: the baseline)
	Leader  string `json:"leader"`
	// RenewRecovery: the failed renew's event → the next successful renew's.
	RenewRecovery float64 `json:"renew_recovery_s"`
	// StepDownLate: stopped_leading − the deadline (valid_until) it had,
	// after the supervisor was cut off from storage.
	StepDownLate float64 `json:"step_down_late_s"`
	// ReapedAfter: the command's reaped child_exited − the deadline; the
	// bound is kill-grace + KillTimeout (docs/failover.md, "Commands").
	ReapedAfter float64 `json:"reaped_after_deadline_s"`
	// Overlap: the old command's last report − the next command's first
	// report, from the commands' own activity (0 when none).
	Overlap float64 `json:"overlap_s"`
	// Gap: the next command's first report − the old command's last (the
	// margin by which they did not overlap; negative when they did).
	Gap float64 `json:"gap_s"`
}

// BlockedOutputResult is the blocked-output row of the run-mode section.
type BlockedOutputResult struct {
	Job        string               `json:"job"`
	Trials     []BlockedOutputTrial `json:"trials"`
	Violations map[string]int       `json:"violations"` // Check and CheckCommands, by invariant
}

// BlockedOutputRun starts three `blobleader run` supervisors of the ledger
// test command, with their output through a pipe the harness can block, and
// measures 2n leaderships, alternately with the output blocked and not:
// after 0.5 s + U(0, 1 s) the leader's output is blocked (or not), one renew
// is made to fail (a black-holed link until its renew_failed), the link is
// healed and the next renew awaited, then the leader is cut off from storage
// until its step-down, its command's reap and the next command's first
// report. The checker judges supervisors and commands afterwards.
func BlockedOutputRun(t testing.TB, env Env, fl Flavor, n int, job string) BlockedOutputResult {
	out := BlockedOutputResult{Job: job, Violations: map[string]int{}}
	c := newCluster(t, fl)
	activity := filepath.Join(c.Dir(), "activity.jsonl")
	command := []string{cluster.LedgerCommandBinary(t), "--connection-string", c.DirectConnectionString(), "--container", c.ContainerName(),
		"--blob", "leader-cmd", "--activity", activity, "--interval", "100ms"}
	startWorkers(t, c, fl, 3, 2*time.Minute, cluster.RunCommand(command...), cluster.BlockableOutput())
	start := time.Now()
	p := fl.Params
	wait := fl.crashBound() + 20*time.Second
	fault := func(f chaos.Fault, w cluster.Worker, inject bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var err error
		if inject {
			err = c.Inject(ctx, f, w)
		} else {
			err = c.Remove(ctx, f)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 2*n; i++ {
		cur := awaitRunning(t, c, wait, 0)
		w := workerNamed(t, c, cur.Identity)
		env.sleep(t, 500*time.Millisecond+time.Duration(env.Rand.Int64N(int64(time.Second))))
		tr := BlockedOutputTrial{Blocked: i%2 == 1, Leader: cur.Identity}
		blocked := &chaos.BlockedOutput{}
		if tr.Blocked {
			fault(blocked, w, true)
		}
		drop := &chaos.Timeout{}
		fault(drop, w, true)
		failed := awaitEvent(t, c, p.RenewInterval+p.RequestTimeout()+10*time.Second, "renew_failed", func(e checker.Event) bool {
			return e.Identity == cur.Identity && e.Event == checker.EventRenewFailed && e.Term == cur.Term
		})
		fault(drop, w, false)
		renewed := awaitEvent(t, c, p.RenewDeadline, "a renew after the failed one", func(e checker.Event) bool {
			return e.Identity == cur.Identity && e.Event == checker.EventRenewed && e.Term == cur.Term && e.T.After(failed.T)
		})
		part := &chaos.Partition{}
		fault(part, w, true)
		stopped := awaitEvent(t, c, p.RenewDeadline+p.RequestTimeout()+10*time.Second, "stopped_leading", func(e checker.Event) bool {
			return e.Identity == cur.Identity && e.Event == checker.EventStoppedLeading && e.Term == cur.Term
		})
		exited := awaitChild(t, c, wait, fmt.Sprintf("child_exited of %d", cur.PID), func(e checker.ChildEvent) bool {
			return e.Event.Event == checker.EventChildExited && e.Identity == cur.Identity && e.PID == cur.PID
		})
		next := awaitRunning(t, c, wait, cur.PID)
		firstNext := awaitActivity(t, activity, 20*time.Second, "a report of the next command", func(a checker.Activity) bool { return a.Holder == next.Identity && a.Term == next.Term })
		fault(part, w, false)
		if tr.Blocked {
			fault(blocked, w, false)
		}
		_, lastOld := reportSpan(t, activity, cur.Identity, cur.Term)
		tr.RenewRecovery = renewed.T.Sub(failed.T).Seconds()
		tr.StepDownLate = stopped.T.Sub(stopped.ValidUntil).Seconds()
		tr.ReapedAfter = exited.T.Sub(stopped.ValidUntil).Seconds()
		tr.Overlap = max(0, lastOld.Sub(firstNext.At).Seconds())
		tr.Gap = firstNext.At.Sub(lastOld).Seconds()
		out.Trials = append(out.Trials, tr)
		env.Progress(fmt.Sprintf("%s: %d/%d blocked=%v %s: renewed %.3f s after the failed renew; stepped down %.3f s after its deadline; command reaped %.3f s after it; overlap %.3f s (gap %.3f s)",
			job, i, 2*n, tr.Blocked, tr.Leader, tr.RenewRecovery, tr.StepDownLate, tr.ReapedAfter, tr.Overlap, tr.Gap))
	}

	run, res := judge(t, c, fl, start)
	run.End = time.Now()
	acts := readActivity(t, activity)
	cres, err := checker.CheckCommands(checker.CommandRun{Run: run, Activity: acts}, checker.CommandParams{Params: scenarios.CheckerParams(fl.Params)})
	if err != nil {
		t.Fatalf("check commands: %v", err)
	}
	countViolations(out.Violations, nil, checker.Compose(res.Verdict, cres.Verdict))
	return out
}

// awaitEvent polls the histories until an event satisfies pred.
func awaitEvent(t testing.TB, c *cluster.Local, timeout time.Duration, what string, pred func(checker.Event) bool) checker.Event {
	return await(t, timeout, what, func() []checker.Event {
		evs, err := checker.ReadWrittenHistory(c.HistoryFiles()...)
		if err != nil {
			t.Fatalf("read histories: %v", err)
		}
		return evs
	}, pred)
}

// blockedOutputView is the blocked-output rows of the run-mode section.
type blockedOutputView struct {
	Blocked, Flowing int // leaderships with the output blocked, and without
	Rows             []blockedOutputRow
	Jobs             []BlockedOutputResult
}

type blockedOutputRow struct {
	Measure, Output string
	Stats           Stats
}

// BlockedOutputView is the blocked-output rows, nil without the phase.
func (d *benchDoc) BlockedOutputView() *blockedOutputView {
	if len(d.BlockedOutput) == 0 {
		return nil
	}
	var rows [2][5][]float64 // [blocked][measure]
	for _, m := range d.BlockedOutput {
		for _, tr := range m.Trials {
			b := 0
			if tr.Blocked {
				b = 1
			}
			for k, v := range []float64{tr.RenewRecovery, tr.StepDownLate, tr.ReapedAfter, tr.Overlap, tr.Gap} {
				rows[b][k] = append(rows[b][k], v)
			}
		}
	}
	v := &blockedOutputView{Blocked: len(rows[1][0]), Flowing: len(rows[0][0]), Jobs: d.BlockedOutput}
	for k, name := range []string{"failed renew → next renew", "step-down − deadline", "command reaped − deadline", "command overlap", "gap between the commands"} {
		for b, label := range []string{"flowing", "blocked"} {
			v.Rows = append(v.Rows, blockedOutputRow{name, label, Summarize(rows[b][k])})
		}
	}
	return v
}
