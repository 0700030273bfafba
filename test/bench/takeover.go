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
// takeovers, and storage operations per worker-hour of both
// (takeover.md.tmpl).
func TakeoverSection(r Results) string {
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, "takeover.md.tmpl", newTakeoverView(r)); err != nil {
		return fmt.Sprintf("takeover.md: %v\n", err)
	}
	return b.String()
}

// takeoverView is what takeover.md.tmpl renders.
type takeoverView struct {
	Results
	Rows               []takeoverRow
	FastKill, OursKill Stats
	ShowRatio          bool    // the fast profile's p99 is a positive number
	FastBound          float64 // its L1 bound from the last renew, s
	OursBound          float64 // the default's, s
	Inconclusive       int     // crash trials of both profiles not counted
	Costs              []takeoverCost
}

type takeoverRow struct {
	Profile, From string
	Stats
}

type takeoverCost struct {
	Name             string
	Leader, Follower RoleCost
	USD              float64 // est. per month, a leader and two followers
}

func newTakeoverView(r Results) takeoverView {
	fast, ours := Fast(""), Ours("")
	fc, oc := r.Trials("fast", checker.FaultCrash), r.Trials("ours", checker.FaultCrash)
	v := takeoverView{Results: r, FastKill: Summarize(FromFault(fc)), OursKill: Summarize(FromFault(oc))}
	v.Rows = []takeoverRow{
		{"fast (T 2 s, B 4 s)", "SIGKILL", v.FastKill},
		{"fast (T 2 s, B 4 s)", "last renew sent", Summarize(FromBasis(fc))},
		{"default (no early takeover)", "SIGKILL", v.OursKill},
		{"default (no early takeover)", "last renew sent", Summarize(FromBasis(oc))},
	}
	v.ShowRatio = v.FastKill.P99 > 0
	fp := fast.Params
	v.FastBound = fp.TakeoverAfter.Seconds() + fp.BreakPeriod.Seconds() + 2*1.1*fp.RetryPeriod.Seconds() + 5*fp.RequestTimeout().Seconds() + 1
	v.OursBound = ours.crashBound().Seconds() + 1
	v.Inconclusive = r.Inconclusive("fast", checker.FaultCrash) + r.Inconclusive("ours", checker.FaultCrash)
	for _, fl := range []Flavor{fast, ours} {
		c, have := r.CostOf(fl.Name)
		if !have {
			continue
		}
		l, _ := c.Leader()
		f, _ := c.Follower()
		v.Costs = append(v.Costs, takeoverCost{fl.Name, l, f, MonthlyUSD(l.ByOp, IsElectionOp) + 2*MonthlyUSD(f.ByOp, IsElectionOp)})
	}
	return v
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
