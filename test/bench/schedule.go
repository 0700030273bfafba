package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/cluster"
)

// Step is one slot of the fixed fault schedule.
type Step struct {
	Name     string
	Fault    func() chaos.Fault
	OnLeader bool          // target the leader of the moment (else every worker / the blob)
	Hold     time.Duration // removed (healed, restarted) this long after injection
}

// SlotLength is the time given to each step: long enough for the sample's
// slowest recovery (lease expiry ≤ 15 s + a 20 s acquire sleep) after the
// longest hold.
const SlotLength = 50 * time.Second

// Schedule is the fixed fault schedule: one fault per slot, always in this
// order and with these parameters, for both flavors.
func Schedule() []Step {
	return []Step{
		{Name: "crash the leader (SIGKILL), restart it after 40 s", OnLeader: true, Hold: 40 * time.Second,
			Fault: func() chaos.Fault { return &chaos.Crash{Restart: true} }},
		{Name: "stop the leader (SIGTERM), restart it after 40 s", OnLeader: true, Hold: 40 * time.Second,
			Fault: func() chaos.Fault { return &chaos.Stop{Restart: true} }},
		{Name: "pause the leader (SIGSTOP) for 20 s", OnLeader: true, Hold: 20 * time.Second,
			Fault: func() chaos.Fault { return &chaos.Pause{} }},
		{Name: "partition the leader from storage (black hole) for 20 s", OnLeader: true, Hold: 20 * time.Second,
			Fault: func() chaos.Fault { return &chaos.Partition{Mode: chaos.Blackhole} }},
		{Name: "slow the leader's storage: +1.5 s each way (3 s round trip) for 20 s", OnLeader: true, Hold: 20 * time.Second,
			Fault: func() chaos.Fault { return &chaos.Latency{Latency: 1500} }},
		{Name: "storage outage for every worker for 10 s", Hold: 10 * time.Second,
			Fault: func() chaos.Fault { return &chaos.Outage{Mode: chaos.Blackhole} }},
		{Name: "operator BreakLease(0)", Hold: 0,
			Fault: func() chaos.Fault { return &chaos.BreakLease{} }},
	}
}

// ScheduleRun starts three workers, waits for a leader, then runs the fixed
// schedule: step i is injected at start + i·SlotLength and removed Hold
// later, whatever the cluster does meanwhile. Leaderless time is counted over
// exactly the schedule's window.
func ScheduleRun(t testing.TB, env Env, fl Flavor, job string) RunResult {
	c := startCluster(t, fl, 3)
	if _, err := c.FindLeader(fl.crashBound() + 20*time.Second); err != nil {
		t.Fatalf("%v", err)
	}
	ctx := context.Background()
	steps := Schedule()
	start := time.Now()
	var skipped []string
	for i, s := range steps {
		slot := start.Add(time.Duration(i) * SlotLength)
		env.sleep(t, time.Until(slot))
		var target cluster.Worker
		if s.OnLeader {
			w, err := c.FindLeader(2 * time.Second)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("step %d (%s): no single leader at its slot", i+1, s.Name))
				env.Progress(fmt.Sprintf("%s: step %d/%d skipped: no single leader", job, i+1, len(steps)))
				continue
			}
			target = w
		}
		f := s.Fault()
		if err := c.Inject(ctx, f, target); err != nil {
			skipped = append(skipped, fmt.Sprintf("step %d (%s): %v", i+1, s.Name, err))
			env.Progress(fmt.Sprintf("%s: step %d/%d failed to inject: %v", job, i+1, len(steps), err))
			continue
		}
		env.Progress(fmt.Sprintf("%s: step %d/%d: %s", job, i+1, len(steps), s.Name))
		env.sleep(t, s.Hold)
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := c.Remove(rctx, f)
		cancel()
		if err != nil {
			t.Errorf("step %d: remove: %v", i+1, err)
		}
	}
	env.sleep(t, time.Until(start.Add(time.Duration(len(steps))*SlotLength)))
	run, res := judge(t, c, fl, start)
	out := summarizeRun(env, job, fl, "schedule", run, res)
	out.Skipped = skipped
	for _, fo := range res.Failovers {
		tr := Trial{Job: job + ":" + fo.Kind, Leader: fo.Leader, NewLeader: fo.NewLeader, Basis: fo.Basis, Bound: fo.Bound.Seconds(), Note: fo.Inconclusive}
		if !fo.To.IsZero() {
			tr.FromFault = fo.To.Sub(fo.Injected).Seconds()
			tr.FromBasis = fo.Duration.Seconds()
		}
		out.Trials = append(out.Trials, tr)
	}
	return out
}
