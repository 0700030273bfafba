package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// Fast is the worker on README's fast profile with early takeover
// (docs/failover.md#early-takeover): L 15 s, D 2 s, renew 0.5 s, P 0.5 s,
// T 2 s, B 4 s; tick and shutdown grace as Ours.
func Fast(bin string) Flavor {
	p := cluster.FastParams()
	p.Tick, p.ShutdownGrace = time.Second, 5*time.Second
	return Flavor{Name: "fast", Label: "blobleader fast profile (L 15 s, D 2 s, renew 0.5 s, P 0.5 s, early takeover T 2 s, B 4 s)", Binary: bin, Params: p}
}

// breaksByCause sorts a run's lease_broken events by the fault that made
// the broken leader stale: the latest fault on it (or on everyone) that
// started before the break, within a lease and a break period; a break
// with no such fault is a false takeover (the checker's takeover rule
// judges the ones it can prove).
func breaksByCause(run checker.Run, p cluster.Params) map[string]int {
	out := map[string]int{}
	for _, e := range run.Events {
		if e.Event != checker.EventLeaseBroken {
			continue
		}
		cause := "none (false takeover)"
		var latest time.Time
		for _, f := range run.Faults {
			hits := f.Target == "" || f.Target == checker.AllWorkers || f.Target == e.Leader
			if hits && !f.Start.After(e.T) && e.T.Sub(f.Start) <= p.LeaseDuration+p.BreakPeriod && f.Start.After(latest) {
				cause, latest = f.Kind, f.Start
			}
		}
		out[cause]++
	}
	return out
}

// TakeoverSection is the markdown of the takeover phase: host-loss failover
// with the fast profile beside the default, breaks by cause and false
// takeovers, and storage operations per worker-hour of both.
func TakeoverSection(r Results) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	fast, ours := Fast(""), Ours("")
	fc, oc := r.Trials("fast", checker.FaultCrash), r.Trials("ours", checker.FaultCrash)
	fk, ok := Summarize(FromFault(fc)), Summarize(FromFault(oc))
	fr, or := Summarize(FromBasis(fc)), Summarize(FromBasis(oc))
	w("Host loss (SIGKILL of the leader, a new incarnation restarted after each trial), three workers on one Azurite:\n\n")
	w("| profile | from | n | p50 s | p99 s | max s | mean s |\n|---|---|---|---|---|---|---|\n")
	row := func(label, from string, s Stats) {
		w("| %s | %s | %d | %.2f | %.2f | %.2f | %.2f |\n", label, from, s.N, s.P50, s.P99, s.Max, s.Mean)
	}
	row("fast (T 2 s, B 4 s)", "SIGKILL", fk)
	row("fast (T 2 s, B 4 s)", "last renew sent", fr)
	row("default (no early takeover)", "SIGKILL", ok)
	row("default (no early takeover)", "last renew sent", or)
	if fk.P99 > 0 {
		w("| ratio default ÷ fast | SIGKILL | | %.2f | %.2f | %.2f | |\n", ok.P50/fk.P50, ok.P99/fk.P99, ok.Max/fk.Max)
	}
	w("\nTarget: fast p99 ≤ 7 s from the SIGKILL: %s. Bounds: fast T + B + 2·1.1·P + 5·request timeout + ε = %.1f s from the last renew; default L + 1.1·P + ε = %.1f s.\n\n",
		map[bool]string{true: "**met**", false: "**missed**"}[fk.N > 0 && fk.P99 <= 7], fast.Params.TakeoverAfter.Seconds()+fast.Params.BreakPeriod.Seconds()+2*1.1*fast.Params.RetryPeriod.Seconds()+5*fast.Params.RequestTimeout().Seconds()+1,
		ours.crashBound().Seconds()+1)
	if n := r.Inconclusive("fast", checker.FaultCrash) + r.Inconclusive("ours", checker.FaultCrash); n > 0 {
		w("%d trial(s) inconclusive (not counted).\n\n", n)
	}
	w("Breaks (lease_broken) by cause, every fast-profile run; checker verdicts:\n\n| run | breaks by cause | violations |\n|---|---|---|\n")
	for _, run := range r.Runs {
		if run.Flavor != "fast" {
			continue
		}
		w("| %s (%s) | %s | %s |\n", run.Job, run.Kind, causeText(run.Breaks), violationText(run.Violations))
	}
	w("\nStorage operations per worker-hour (steady state, election only; the ledger adds one append per tick):\n\n| profile | leader | follower | est. $/month, 3 workers |\n|---|---|---|---|\n")
	for _, fl := range []Flavor{fast, ours} {
		c, have := r.CostOf(fl.Name)
		if !have {
			continue
		}
		l, _ := c.Leader()
		f, _ := c.Follower()
		w("| %s | %.0f (%s) | %.0f (%s) | $%.2f |\n", fl.Name, l.Election, opsText(l.ByOp), f.Election, opsText(f.ByOp),
			MonthlyUSD(l.ByOp, IsElectionOp)+2*MonthlyUSD(f.ByOp, IsElectionOp))
	}
	return b.String()
}

func causeText(m map[string]int) string { return countsText(m, " ", "none") }

func opsText(m map[string]float64) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		if IsElectionOp(k) && m[k] >= 1 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
		}
	}
	return strings.Join(parts, ", ")
}
