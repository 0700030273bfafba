package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/report"
	"github.com/blobleader/blobleader/test/scenarios"
)

// Trial is one measured failover.
type Trial struct {
	Job       string  `json:"job"`
	Leader    string  `json:"leader"`
	NewLeader string  `json:"new_leader"`
	FromFault float64 `json:"from_fault_s"` // SIGKILL (process seen dead) or SIGTERM → next started_leading
	FromBasis float64 `json:"from_basis_s"` // checker's From (last renew sent / release) → next started_leading
	Basis     string  `json:"basis"`
	Bound     float64 `json:"bound_s"` // checker's L1 bound from From (includes ε = 1 s)
	Note      string  `json:"note,omitempty"`
}

// RunResult is what one cluster run leaves for the doc.
type RunResult struct {
	Job        string         `json:"job"`
	Flavor     string         `json:"flavor"`
	Kind       string         `json:"kind"`
	Trials     []Trial        `json:"trials,omitempty"`
	Violations map[string]int `json:"violations"` // by invariant
	Examples   []string       `json:"violation_examples,omitempty"`
	Timeline   string         `json:"timeline,omitempty"` // SVG file name in the plot dir
	Seconds    float64        `json:"run_s"`
	Leaderless float64        `json:"leaderless_s"`
	LongestGap float64        `json:"longest_leaderless_s"`
	Faults     int            `json:"faults"`
	Skipped    []string       `json:"skipped_steps,omitempty"`
	Breaks     map[string]int `json:"breaks_by_cause,omitempty"` // early takeover's lease_broken by fault kind (takeover.go)
	NewLeaders int            `json:"new_leaders,omitempty"`     // slow-storage runs: leaderships begun after the faults began (takeover.go)
	Err        string         `json:"error,omitempty"`
}

// Env is what every job gets.
type Env struct {
	Ctx      context.Context // ends on ^C: jobs stop at their next wait (nil: never)
	PlotDir  string          // where timelines go
	Progress func(string)    // one line of progress
	Rand     *rand.Rand      // per job, seeded
}

// sleep waits d, or fails t when the run is interrupted (its cleanups then
// stop every process of the job).
func (e Env) sleep(t testing.TB, d time.Duration) {
	if e.Ctx == nil {
		time.Sleep(d)
		return
	}
	select {
	case <-time.After(d):
	case <-e.Ctx.Done():
		t.Fatalf("interrupted: %v", e.Ctx.Err())
	}
}

// startCluster starts n workers of fl with opts on a new local cluster.
func startCluster(t testing.TB, fl Flavor, n int, opts ...cluster.Option) *cluster.Local {
	c := newCluster(t, fl)
	startWorkers(t, c, fl, n, 2*time.Minute, opts...)
	return c
}

// newCluster is a local cluster of fl's binary and timings, with no worker
// started yet.
func newCluster(t testing.TB, fl Flavor) *cluster.Local {
	return cluster.NewLocal(t, cluster.LocalConfig{Params: fl.Params, Binary: fl.Binary})
}

// startWorkers starts n workers of fl with opts on c within timeout, or
// fails t.
func startWorkers(t testing.TB, c *cluster.Local, fl Flavor, n int, timeout time.Duration, opts ...cluster.Option) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if len(fl.Args) > 0 {
		opts = append([]cluster.Option{cluster.Args(fl.Args...)}, opts...)
	}
	if _, err := c.Start(ctx, n, opts...); err != nil {
		t.Fatalf("start %d %s workers: %v", n, fl.Name, err)
	}
}

// FailoverRun starts three workers and, n times: waits for a leader, waits a
// random 1 s + U(0, renew interval) before a crash (so it lands at a random
// phase of the renew cycle; 1 s + U(0, 1 s) before a graceful stop), kills it (kind "crash": SIGKILL) or stops it (kind
// "graceful": SIGTERM), waits for another leader, and restarts the victim as a
// new incarnation. The checker then judges the whole run and its Failovers
// give the durations.
func FailoverRun(t testing.TB, env Env, fl Flavor, kind string, n int, job string) RunResult {
	c := startCluster(t, fl, 3)
	ctx := context.Background()
	start := time.Now()
	wait := fl.crashBound() + 20*time.Second
	for i := 1; i <= n; i++ {
		leader, err := c.FindLeader(wait)
		if err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
		// A crash lands at a random phase of the renew cycle; a graceful stop's
		// handover depends only on the followers' poll phases.
		spread := fl.Params.RenewInterval
		if kind == checker.FaultGraceful {
			spread = time.Second
		}
		env.sleep(t, time.Second+time.Duration(env.Rand.Int64N(int64(spread))))
		var f chaos.Fault
		switch kind {
		case checker.FaultCrash:
			f = &chaos.Crash{Restart: true}
		case checker.FaultGraceful:
			f = &chaos.Stop{Restart: true}
		default:
			t.Fatalf("unknown kind %q", kind)
		}
		t0 := time.Now()
		if err := c.Inject(ctx, f, leader); err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
		nl, err := c.FindLeader(wait, leader.Identity())
		if err != nil {
			t.Fatalf("trial %d: no new leader after %s of %s: %v", i, kind, leader.Identity(), err)
		}
		env.Progress(fmt.Sprintf("%s: %s %d/%d: %s → %s seen after %.1f s", job, kind, i, n, leader.Identity(), nl.Identity(), time.Since(t0).Seconds()))
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		err = c.Remove(rctx, f)
		cancel()
		if err != nil {
			t.Fatalf("trial %d: restart %s: %v", i, leader.Slot(), err)
		}
	}
	run, res := judge(t, c, fl, start)
	out := summarizeRun(env, job, fl, kind, run, res)
	for _, fo := range res.Failovers {
		if fo.Kind != kind {
			continue
		}
		tr := Trial{Job: job, Leader: fo.Leader, NewLeader: fo.NewLeader, Basis: fo.Basis, Bound: fo.Bound.Seconds(), Note: fo.Inconclusive}
		if !fo.To.IsZero() {
			tr.FromFault = fo.To.Sub(fo.Injected).Seconds()
			tr.FromBasis = fo.Duration.Seconds()
		}
		out.Trials = append(out.Trials, tr)
	}
	return out
}

// judge heals, collects the run from start to now and checks it.
func judge(t testing.TB, c *cluster.Local, fl Flavor, start time.Time) (checker.Run, checker.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := collectSince(ctx, t, c, fl, start)
	res, err := checker.Check(run, scenarios.CheckerParams(fl.Params))
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return run, res
}

// collectSince heals every fault and reads the run from start to now.
func collectSince(ctx context.Context, t testing.TB, c *cluster.Local, fl Flavor, start time.Time) checker.Run {
	if err := c.Heal(ctx); err != nil {
		t.Errorf("heal: %v", err)
	}
	end := time.Now()
	h, err := c.History(ctx, fl.livenessWindow())
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	run, err := scenarios.Collect(ctx, c, h)
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	run.Start, run.End = start, end
	return run
}

func summarizeRun(env Env, job string, fl Flavor, kind string, run checker.Run, res checker.Result) RunResult {
	s := report.Summarize(run, res)
	out := RunResult{
		Job: job, Flavor: fl.Name, Kind: kind, Violations: map[string]int{},
		Seconds: s.DurationSeconds, Leaderless: s.LeaderlessS, LongestGap: s.LongestGapS, Faults: s.Faults,
	}
	if b := breaksByCause(run, fl.Params); len(b) > 0 {
		out.Breaks = b
	}
	countViolations(out.Violations, &out.Examples, res.Verdict)
	if env.PlotDir != "" {
		name := "timeline-" + job + ".svg"
		f, err := os.Create(filepath.Join(env.PlotDir, name))
		if err == nil {
			err = report.WriteSVG(f, run, res)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			out.Err = fmt.Sprintf("timeline: %v", err)
		} else {
			out.Timeline = name
		}
	}
	return out
}

// sortedKeys returns a map's keys in order (for stable output).
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }
