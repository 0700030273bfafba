package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/scenarios"
)

// The shards phase: a --shards pool of the real binary on a
// private Azurite per cluster. Failover after a member's crash or graceful
// leave, moves per join and leave against the minimum, storage operations
// per worker-hour, and a scale step (N shards over M workers). Histories are
// judged by checker.Check and checker.CheckShards; the per-shard intervals
// they return are what the durations are computed from.

// ShardTrial is one fault on a shard owner that is not the election's leader.
type ShardTrial struct {
	Kind      string  `json:"kind"` // crash (SIGKILL) or graceful (SIGTERM)
	Victim    string  `json:"victim"`
	Owned     int     `json:"owned"`        // shards the victim owned at the fault
	FromFault float64 `json:"from_fault_s"` // the fault → the last of them acquired by another worker
	// MaxFromBasis is the slowest of the victim's shards counted as the
	// checker's per-shard L1 counts (from the owner's last renew after a
	// crash, from its release after a graceful stop); Bound is that bound.
	MaxFromBasis float64 `json:"max_from_basis_s"`
	Bound        float64 `json:"bound_s"`
	Note         string  `json:"note,omitempty"` // why the trial is inconclusive
}

// ShardMove is one membership change the checker judged for stickiness.
type ShardMove struct {
	Kind    string `json:"kind"` // join, or the leave's fault kind (crash, graceful)
	Moves   int    `json:"moves"`
	Minimum int    `json:"minimum"` // -1: not judged (the pool was not balanced before)
}

// ShardRunResult is one failover cluster run of the shards phase.
type ShardRunResult struct {
	Job        string         `json:"job"`
	Kind       string         `json:"kind"`
	Shards     int            `json:"shards"`
	Workers    int            `json:"workers"`
	Trials     []ShardTrial   `json:"trials"`
	Moves      []ShardMove    `json:"moves"`
	Violations map[string]int `json:"violations"` // Check and CheckShards, by invariant
	Examples   []string       `json:"violation_examples,omitempty"`
	Seconds    float64        `json:"run_s"`
}

// ShardCostResult is the steady-state storage cost of a --shards pool.
type ShardCostResult struct {
	Job     string     `json:"job"`
	Shards  int        `json:"shards"`
	WindowS float64    `json:"window_s"`
	Workers []RoleCost `json:"workers"` // Role: the election role; Election: coordination and shard-lease ops; Task: shard ledgers and history
	Owned   []int      `json:"owned"`   // shards each worker owned at the end, same order
}

// ShardScaleResult is the scale step: N shards over M workers on one Azurite.
type ShardScaleResult struct {
	Job        string         `json:"job"`
	Shards     int            `json:"shards"`
	Workers    int            `json:"workers"`
	BalanceS   float64        `json:"balance_s"` // the last worker started → every shard owned, ⌊N/M⌋ or ⌈N/M⌉ each
	Trials     []ShardTrial   `json:"trials"`
	PerShard   []float64      `json:"per_shard_from_fault_s"` // every victim's shard: the crash → owned again
	Rebalance  []string       `json:"rebalance,omitempty"`    // after each crash and each restart: the time to balance again, or why not
	Err        string         `json:"error,omitempty"`
	WindowS    float64        `json:"window_s"`
	Requests   float64        `json:"requests"`       // storage requests of all workers in the steady window
	RequestPS  float64        `json:"requests_per_s"` // the same per second
	P99        float64        `json:"request_p99_s"`  // upper bound of the histogram bucket holding the p99
	P50        float64        `json:"request_p50_s"`  // same for p50
	Violations map[string]int `json:"violations"`
	Examples   []string       `json:"violation_examples,omitempty"`
}

// ShardsResult is everything the shards phase measured.
type ShardsResult struct {
	Runs  []ShardRunResult   `json:"runs,omitempty"`
	Cost  []ShardCostResult  `json:"cost,omitempty"`
	Scale []ShardScaleResult `json:"scale,omitempty"`
}

// shardSlack is the margin on every wait beyond the bound it waits for.
const shardSlack = 30 * time.Second

func shardSettle(fl Flavor) time.Duration {
	return checker.DefaultSettle(scenarios.CheckerParams(fl.Params))
}

func startShardCluster(t testing.TB, fl Flavor, n, m int) *cluster.Local {
	c := newCluster(t, fl)
	startWorkers(t, c, fl, m, 3*time.Minute, cluster.Args("--shards", fmt.Sprint(n)))
	return c
}

// shardOwners asks every running worker's /status which shards it owns.
func shardOwners(c *cluster.Local) (owner map[int]string, counts map[string]int, dup bool) {
	owner, counts = map[int]string{}, map[string]int{}
	for _, w := range c.Workers() {
		if !w.Running() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		st, err := w.Status(ctx)
		cancel()
		if err != nil {
			continue
		}
		counts[st.Identity] += 0
		for _, s := range st.Shards {
			if _, ok := owner[s]; ok {
				dup = true
			}
			owner[s] = st.Identity
			counts[st.Identity]++
		}
	}
	return owner, counts, dup
}

// awaitShards polls /status until ok holds for the running workers' shards,
// or fails t after timeout.
func awaitShards(t testing.TB, env Env, c *cluster.Local, timeout time.Duration, what string, ok func(owner map[int]string, counts map[string]int, dup bool) bool) {
	if err := pollShards(t, env, c, timeout, what, ok); err != nil {
		t.Fatalf("%v", err)
	}
}

// pollShards is awaitShards returning the timeout as an error.
func pollShards(t testing.TB, env Env, c *cluster.Local, timeout time.Duration, what string, ok func(owner map[int]string, counts map[string]int, dup bool) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		owner, counts, dup := shardOwners(c)
		if ok(owner, counts, dup) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v (last counts %v)", what, timeout, counts)
		}
		env.sleep(t, 200*time.Millisecond)
	}
}

// awaitShardBalance waits until the running workers own every shard once,
// ⌊N/M⌋ or ⌈N/M⌉ each.
func awaitShardBalance(t testing.TB, env Env, c *cluster.Local, n int, timeout time.Duration) {
	if err := pollShardBalance(t, env, c, n, timeout); err != nil {
		t.Fatalf("%v", err)
	}
}

// pollShardBalance is awaitShardBalance returning the timeout as an error.
func pollShardBalance(t testing.TB, env Env, c *cluster.Local, n int, timeout time.Duration) error {
	running := 0
	for _, w := range c.Workers() {
		if w.Running() {
			running++
		}
	}
	return pollShards(t, env, c, timeout, fmt.Sprintf("%d shards balanced over %d workers", n, running), func(owner map[int]string, counts map[string]int, dup bool) bool {
		if dup || len(owner) != n || len(counts) != running {
			return false
		}
		q := n / running
		for _, k := range counts {
			if k != q && k != q+1 {
				return false
			}
		}
		return true
	})
}

// holdUntil sleeps until at (nothing when it has passed).
func holdUntil(t testing.TB, env Env, at time.Time) {
	if d := time.Until(at); d > 0 {
		env.sleep(t, d)
	}
}

// shardFault injects a crash or graceful stop (restartable by Remove) on a
// random running worker that is not the election's leader and owns shards,
// at a random phase of the renew cycle, and waits until the others own every
// shard. It returns the fault and its injection time.
func shardFault(t testing.TB, env Env, c *cluster.Local, fl Flavor, kind string, n int) (chaos.Fault, cluster.Worker, time.Time) {
	leader, err := c.FindLeader(fl.crashBound() + shardSlack)
	if err != nil {
		t.Fatalf("%v", err)
	}
	owner, _, _ := shardOwners(c)
	var cands []cluster.Worker
	for _, w := range c.Workers() {
		if w.Running() && w.Identity() != leader.Identity() && slices.Contains(mapValues(owner), w.Identity()) {
			cands = append(cands, w)
		}
	}
	if len(cands) == 0 {
		t.Fatalf("no running non-leader that owns a shard")
	}
	victim := cands[env.Rand.IntN(len(cands))]
	env.sleep(t, time.Second+time.Duration(env.Rand.Int64N(int64(fl.Params.RenewInterval))))
	var f chaos.Fault
	switch kind {
	case checker.FaultCrash:
		f = &chaos.Crash{Restart: true}
	case checker.FaultGraceful:
		f = &chaos.Stop{Restart: true, Grace: (fl.Params.ShutdownGrace + 10*time.Second).Milliseconds()}
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	t0 := time.Now()
	if err := c.Inject(context.Background(), f, victim); err != nil {
		t.Fatalf("%s %s: %v", kind, victim.Identity(), err)
	}
	awaitShards(t, env, c, fl.crashBound()+shardSlack, fmt.Sprintf("the others own all %d shards after the %s of %s", n, kind, victim.Identity()), func(owner map[int]string, _ map[string]int, dup bool) bool {
		return !dup && len(owner) == n
	})
	return f, victim, t0
}

func mapValues(m map[int]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// restart ends fault f (the victim starts again as a new incarnation).
func restart(t testing.TB, c *cluster.Local, f chaos.Fault) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Remove(ctx, f); err != nil {
		t.Fatalf("restart after %s: %v", f.Kind(), err)
	}
	return time.Now()
}

// judgeShards heals, collects the run from start and checks it with the
// election's rules (no ledger: the leader's task coordinates) and the
// shard rules (with every shard's ledger read back).
func judgeShards(t testing.TB, c *cluster.Local, fl Flavor, n int, start time.Time) (checker.ShardRun, checker.Result, checker.ShardResult) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := collectSince(ctx, t, c, fl, start)
	srun, res, sres, err := scenarios.CheckShardRun(ctx, c, run, n, scenarios.CheckerParams(fl.Params), nil)
	if err != nil {
		t.Fatal(err)
	}
	return srun, res, sres
}

// ShardRecovery is how a victim's shards were taken over.
type ShardRecovery struct {
	Owned   int             // shards the victim owned at the fault
	Again   time.Time       // the last of them acquired by another identity
	Missing []int           // owned at the fault and never acquired by another identity
	Each    []time.Duration // per shard: the fault → acquired by another identity
}

// Recovery computes, from each shard's ownership intervals, the shards
// victim owned at the fault (an interval of victim that started at or before
// at and had not ended before it) and when each was next acquired by another
// identity.
func Recovery(intervals map[int][]checker.Interval, victim string, at time.Time) ShardRecovery {
	var r ShardRecovery
	for _, s := range sortedKeys(intervals) {
		ivs := intervals[s]
		for i, iv := range ivs {
			if iv.Identity != victim || iv.Start.After(at) || iv.End.Before(at) {
				continue
			}
			r.Owned++
			var next *checker.Interval
			for j := i + 1; j < len(ivs); j++ {
				if ivs[j].Identity != victim && ivs[j].Start.After(at) {
					next = &ivs[j]
					break
				}
			}
			if next == nil {
				r.Missing = append(r.Missing, s)
				break
			}
			r.Each = append(r.Each, next.Start.Sub(at))
			if next.Start.After(r.Again) {
				r.Again = next.Start
			}
			break
		}
	}
	return r
}

// shardTrial turns one fault into a trial: Recovery for the time until
// every shard is owned again, the checker's per-shard failovers for the
// bound.
func shardTrial(sres checker.ShardResult, f checker.Fault) (ShardTrial, []time.Duration) {
	ivs := map[int][]checker.Interval{}
	for s, r := range sres.PerShard {
		ivs[s] = r.Intervals
	}
	rec := Recovery(ivs, f.Target, f.Start)
	tr := ShardTrial{Kind: f.Kind, Victim: f.Target, Owned: rec.Owned}
	var notes []string
	switch {
	case rec.Owned == 0:
		notes = append(notes, "the victim owned no shard at the fault")
	case len(rec.Missing) > 0:
		notes = append(notes, fmt.Sprintf("shards %v never owned again", rec.Missing))
	default:
		tr.FromFault = rec.Again.Sub(f.Start).Seconds()
	}
	for _, s := range sortedKeys(sres.PerShard) {
		for _, fo := range sres.PerShard[s].Failovers {
			if fo.Kind != f.Kind || fo.Target != f.Target || !fo.Injected.Equal(f.Start) {
				continue
			}
			tr.Bound = fo.Bound.Seconds()
			if fo.Inconclusive != "" {
				notes = append(notes, fmt.Sprintf("shard %d: %s", s, fo.Inconclusive))
				continue
			}
			tr.MaxFromBasis = max(tr.MaxFromBasis, fo.Duration.Seconds())
		}
	}
	tr.Note = strings.Join(notes, "; ")
	return tr, rec.Each
}

// shardMoves classifies the checker's balance moments: a change at a
// crash's or graceful stop's start is that leave, any other a join.
func shardMoves(sres checker.ShardResult, faults []checker.Fault) []ShardMove {
	var out []ShardMove
	for _, b := range sres.Balance {
		kind := "join"
		for _, f := range faults {
			if (f.Kind == checker.FaultCrash || f.Kind == checker.FaultGraceful) && f.Start.Equal(b.Change) {
				kind = f.Kind
			}
		}
		out = append(out, ShardMove{Kind: kind, Moves: b.Moves, Minimum: b.Minimum})
	}
	return out
}

// ShardFailoverRun starts m workers with --shards n and, trials times: waits
// for balance, crashes (SIGKILL) or stops (SIGTERM) a random shard owner
// that is not the election's leader, waits until the others own every shard
// and the checker's settle bound has passed (so the leave's moves are
// judged), restarts the victim and waits the settle bound again (so the
// join's are). The checker judges the whole run afterwards.
func ShardFailoverRun(t testing.TB, env Env, fl Flavor, kind string, n, m, trials int, job string) ShardRunResult {
	c := startShardCluster(t, fl, n, m)
	start := time.Now()
	settle := shardSettle(fl)
	awaitShardBalance(t, env, c, n, settle+shardSlack)
	for i := 1; i <= trials; i++ {
		awaitShardBalance(t, env, c, n, settle+shardSlack)
		f, victim, t0 := shardFault(t, env, c, fl, kind, n)
		env.Progress(fmt.Sprintf("%s: %s %d/%d of %s: all %d shards owned again after %.1f s (seen by polling)", job, kind, i, trials, victim.Identity(), n, time.Since(t0).Seconds()))
		awaitShardBalance(t, env, c, n, settle+shardSlack)
		holdUntil(t, env, t0.Add(settle+time.Second))
		joined := restart(t, c, f)
		awaitShardBalance(t, env, c, n, settle+shardSlack)
		holdUntil(t, env, joined.Add(settle+time.Second))
	}
	run, res, sres := judgeShards(t, c, fl, n, start)
	out := ShardRunResult{Job: job, Kind: kind, Shards: n, Workers: m, Violations: map[string]int{}, Seconds: run.End.Sub(run.Start).Seconds()}
	countViolations(out.Violations, &out.Examples, checker.Compose(res.Verdict, sres.Verdict))
	for _, f := range run.Faults {
		if f.Kind == kind {
			tr, _ := shardTrial(sres, f)
			out.Trials = append(out.Trials, tr)
		}
	}
	out.Moves = shardMoves(sres, run.Faults)
	return out
}

// ShardCostRun starts three workers with --shards n, waits for balance and a
// few polls more, and counts each worker's storage requests over window.
func ShardCostRun(t testing.TB, env Env, fl Flavor, n int, window time.Duration, job string) ShardCostResult {
	const m = 3
	c := startShardCluster(t, fl, n, m)
	settle := shardSettle(fl)
	awaitShardBalance(t, env, c, n, settle+shardSlack)
	// Every standby has read the assignment and polls its shards.
	env.sleep(t, 2*(fl.Params.RetryPeriod*11/10+fl.Params.RequestTimeout())+fl.Params.RenewInterval)
	ps := costProbes(t, c)
	ctx := context.Background()
	t0 := time.Now()
	for _, p := range ps {
		p.start(t, ctx)
	}
	env.Progress(fmt.Sprintf("%s: counting storage requests of %d workers with --shards %d for %v", job, m, n, window))
	env.sleep(t, window)
	out := ShardCostResult{Job: job, Shards: n}
	var el float64
	for _, p := range ps {
		var rc RoleCost
		rc, el = p.windowCost(t, ctx, t0)
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		st, err := findStatus(sctx, c.Workers(), p.id)
		cancel()
		if err != nil {
			t.Fatalf("%v", err)
		}
		rc.Role = st.Role
		out.Workers = append(out.Workers, rc)
		out.Owned = append(out.Owned, len(st.Shards))
	}
	out.WindowS = el
	return out
}

// ShardScaleRun starts m workers with --shards n on one Azurite, measures the
// time from the last start to balance, the storage requests' latency over a
// steady window (all workers' histograms), then crashes crashes random
// non-leader owners (each restarted once the pool is balanced again), and
// judges the run.
//
// It fills *out as it goes, so what was measured survives a failure later.
func ShardScaleRun(t testing.TB, env Env, fl Flavor, n, m, crashes int, window time.Duration, job string, out *ShardScaleResult) {
	*out = ShardScaleResult{Job: job, Shards: n, Workers: m, Violations: map[string]int{}}
	c := startShardCluster(t, fl, n, m)
	started := time.Now()
	settle := shardSettle(fl)
	awaitShardBalance(t, env, c, n, settle+2*shardSlack)
	out.BalanceS = time.Since(started).Seconds()
	env.Progress(fmt.Sprintf("%s: %d shards balanced over %d workers %.1f s after the last start", job, n, m, out.BalanceS))

	// Steady window: every worker's request histogram, before and after.
	hist := func() (Buckets, error) {
		sum := Buckets{}
		for _, w := range c.Workers() {
			p, err := FindWorker(c.Dir(), w.Identity())
			if err != nil {
				return nil, err
			}
			b, err := scrapeBuckets(context.Background(), p.Listen)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", w.Identity(), err)
			}
			sum.Add(b)
		}
		return sum, nil
	}
	env.sleep(t, 2*(fl.Params.RetryPeriod*11/10+fl.Params.RequestTimeout()))
	b0, err := hist()
	if err != nil {
		t.Fatalf("%v", err)
	}
	t0 := time.Now()
	env.sleep(t, window)
	b1, err := hist()
	if err != nil {
		t.Fatalf("%v", err)
	}
	out.WindowS = time.Since(t0).Seconds()
	d := b1.Sub(b0)
	out.Requests = d.Count()
	out.RequestPS = out.Requests / out.WindowS
	out.P50, out.P99 = d.Quantile(0.50), d.Quantile(0.99)
	env.Progress(fmt.Sprintf("%s: %.0f storage requests/s over %.0f s, p50 ≤ %g s, p99 ≤ %g s", job, out.RequestPS, out.WindowS, out.P50, out.P99))

	last := started
	rebalance := func(what string, from time.Time) {
		err := pollShardBalance(t, env, c, n, settle+2*shardSlack)
		msg := fmt.Sprintf("%s: balanced again after %.1f s", what, time.Since(from).Seconds())
		if err != nil {
			msg = fmt.Sprintf("%s: %v", what, err)
		}
		out.Rebalance = append(out.Rebalance, msg)
		env.Progress(job + ": " + msg)
	}
	for i := 1; i <= crashes; i++ {
		f, victim, t0 := shardFault(t, env, c, fl, checker.FaultCrash, n)
		env.Progress(fmt.Sprintf("%s: crash %d/%d of %s: all %d shards owned again after %.1f s (seen by polling)", job, i, crashes, victim.Identity(), n, time.Since(t0).Seconds()))
		rebalance(fmt.Sprintf("crash %d of %s", i, victim.Identity()), t0)
		last = restart(t, c, f)
		rebalance(fmt.Sprintf("restart %d of %s", i, victim.Identity()), last)
	}
	holdUntil(t, env, last.Add(settle+time.Second)) // the checker judges the last join's balance
	run, res, sres := judgeShards(t, c, fl, n, started)
	countViolations(out.Violations, &out.Examples, checker.Compose(res.Verdict, sres.Verdict))
	for _, f := range run.Faults {
		if f.Kind == checker.FaultCrash {
			tr, each := shardTrial(sres, f)
			out.Trials = append(out.Trials, tr)
			for _, e := range each {
				out.PerShard = append(out.PerShard, e.Seconds())
			}
		}
	}
}
