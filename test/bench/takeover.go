package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/election"
)

// Fast is the worker on README's fast profile with early takeover
// (docs/failover.md#early-takeover): L 15 s, D 1.5 s, renew 0.5 s,
// P 0.5 s, T 2.25 s; tick and shutdown grace as Ours.
func Fast(bin string) Flavor {
	p := cluster.FastParams()
	p.Tick, p.ShutdownGrace = time.Second, 5*time.Second
	return Flavor{Name: "fast", Label: "blobleader --profile fast (L 15 s, D 1.5 s, renew 0.5 s, P 0.5 s, early takeover after T 2.25 s)", Binary: bin, Params: p}
}

// Previous is the fast profile of the previous early-takeover design, for
// comparison in one run: a break with a period (D 2 s, renew 0.5 s,
// P 0.5 s, T 2 s, B 4 s), run by bin, a binary built from the commit before
// this design (it has --break-period).
func Previous(bin string) Flavor {
	p := cluster.DefaultParams()
	p.Timing = election.Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 2 * time.Second, RenewInterval: 500 * time.Millisecond, RetryPeriod: 500 * time.Millisecond}
	p.TakeoverAfter, p.Tick, p.ShutdownGrace = 2*time.Second, time.Second, 5*time.Second
	return Flavor{Name: "fast-b4", Label: "previous fast (D 2 s, T 2 s, break period B 4 s)", Binary: bin, Params: p, Args: []string{"--break-period", "4s"}}
}

// Slow storage and a paused follower (docs/failover.md#no-false-takeover-of-a-healthy-leader):
// SlowOneWay on every worker's link in both directions (a 400 ms round trip
// on top of Azurite's, against the fast profile's 500 ms request timeout)
// for SlowWindow, and one follower paused FollowerPause a third of the way
// in. Every lease_broken of such a run is a false takeover (its leader was
// healthy), and so is every new leadership.
const (
	SlowOneWay    = 200 * time.Millisecond
	SlowWindow    = 30 * time.Second
	FollowerPause = 6 * time.Second
)

// SlowStorageRun is one slow-storage window on fl's three workers.
func SlowStorageRun(t testing.TB, env Env, fl Flavor, job string) RunResult {
	c := startCluster(t, fl, 3)
	ctx := context.Background()
	start := time.Now()
	leader, err := c.FindLeader(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	env.sleep(t, 2*time.Second)
	var follower cluster.Worker
	for _, w := range c.Workers() {
		if w.Identity() != leader.Identity() && w.Running() {
			follower = w
			break
		}
	}
	began := time.Now()
	var faults []chaos.Fault
	for _, w := range c.Workers() {
		f := &chaos.Latency{Latency: SlowOneWay.Milliseconds(), Stream: chaos.Both}
		if err := c.Inject(ctx, f, w); err != nil {
			t.Fatal(err)
		}
		faults = append(faults, f)
	}
	env.sleep(t, SlowWindow/3)
	pause := &chaos.Pause{}
	if err := c.Inject(ctx, pause, follower); err != nil {
		t.Fatal(err)
	}
	env.sleep(t, FollowerPause)
	if err := c.Remove(ctx, pause); err != nil {
		t.Fatal(err)
	}
	env.sleep(t, time.Until(began.Add(SlowWindow)))
	for _, f := range faults {
		if err := c.Remove(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	env.sleep(t, fl.Params.TakeoverAfter+2*time.Second) // a break decided at the end would show by now
	env.Progress(fmt.Sprintf("%s: %v of %v one way on every link, %s paused %v", job, SlowWindow, SlowOneWay, follower.Identity(), FollowerPause))
	run, res := judge(t, c, fl, start)
	out := summarizeRun(env, job, fl, KindSlowStorage, run, res)
	for _, e := range run.Events {
		if e.Event == checker.EventStartedLeading && e.T.After(began) {
			out.NewLeaders++
		}
	}
	return out
}

// KindSlowStorage is the Kind of a SlowStorageRun.
const KindSlowStorage = "slow-storage"

// falseTakeovers counts the lease_broken events of a slow-storage run.
func falseTakeovers(r RunResult) int {
	n := 0
	for _, v := range r.Breaks {
		n += v
	}
	return n
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
			if hits && !f.Start.After(e.T) && e.T.Sub(f.Start) <= p.LeaseDuration && f.Start.After(latest) {
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
	Inconclusive       int     // crash trials of all profiles not counted
	Costs              []takeoverCost
	Slow               []slowRow // slow-storage runs
}

type slowRow struct {
	Job                        string
	FalseTakeovers, NewLeaders int
	Violations                 map[string]int
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
		{"fast (D 1.5 s, T 2.25 s)", "SIGKILL", v.FastKill},
		{"fast (D 1.5 s, T 2.25 s)", "last renew sent", Summarize(FromBasis(fc))},
		{"default (no early takeover)", "SIGKILL", v.OursKill},
		{"default (no early takeover)", "last renew sent", Summarize(FromBasis(oc))},
	}
	if pc := r.Trials("fast-b4", checker.FaultCrash); len(pc) > 0 {
		v.Rows = append(v.Rows,
			takeoverRow{"previous fast (D 2 s, T 2 s, B 4 s)", "SIGKILL", Summarize(FromFault(pc))},
			takeoverRow{"previous fast (D 2 s, T 2 s, B 4 s)", "last renew sent", Summarize(FromBasis(pc))})
	}
	for _, run := range r.Runs {
		if run.Kind == KindSlowStorage {
			v.Slow = append(v.Slow, slowRow{run.Job, falseTakeovers(run), run.NewLeaders, run.Violations})
		}
	}
	v.ShowRatio = v.FastKill.P99 > 0
	fp := fast.Params
	v.FastBound = fp.TakeoverAfter.Seconds() + fp.RenewInterval.Seconds() + 1.1*fp.RetryPeriod.Seconds() + 9*fp.RequestTimeout().Seconds() + 1
	v.OursBound = ours.crashBound().Seconds() + 1
	v.Inconclusive = r.Inconclusive("fast", checker.FaultCrash) + r.Inconclusive("ours", checker.FaultCrash) + r.Inconclusive("fast-b4", checker.FaultCrash)
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
