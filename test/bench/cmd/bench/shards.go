package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/bench"
	"github.com/blobleader/blobleader/test/checker"
)

// The shards phase: failover and moves at N = 16 over M = 3, the
// storage cost of that pool, and one scale step alone at the end.
var (
	shardTrials = flag.Int("shard-trials", envInt("BENCH_SHARD_TRIALS", 0), "faults per shard failover job, crash and graceful (0: max(3, runs/4)) [BENCH_SHARD_TRIALS]")
	shardScale  = flag.String("shard-scale", envStr("BENCH_SHARD_SCALE", "256x10"), "shards x workers of the shard scale step [BENCH_SHARD_SCALE]")
)

const (
	shardN = 16 // the pool docs/benchmarks.md reports: N = 16, M = 3
	shardM = 3
)

// shardJobs are the shards phase's cluster jobs: failover after crashes
// and after graceful leaves, and the pool's storage cost.
func (b *invocation) shardJobs(fl bench.Flavor) []job {
	runs, costWin := b.cfg.runs, b.cfg.costWin
	trials := *shardTrials
	if trials <= 0 {
		trials = max(3, runs/4)
	}
	add := func(f func(s *bench.ShardsResult)) {
		b.record(func(res *bench.Results) {
			if res.Shards == nil {
				res.Shards = &bench.ShardsResult{}
			}
			f(res.Shards)
		})
	}
	perTrial := 130 * time.Second // fault, take-over, two settle bounds (≈ 49 s each), restart
	var jobs []job
	for _, kind := range []string{checker.FaultCrash, checker.FaultGraceful} {
		name := fmt.Sprintf("%s-shards-%s", fl.Name, kind)
		jobs = append(jobs, job{name: name, cost: time.Duration(trials) * perTrial, run: func(t testing.TB, env bench.Env) {
			r := bench.ShardFailoverRun(t, env, fl, kind, shardN, shardM, trials, name)
			add(func(s *bench.ShardsResult) { s.Runs = append(s.Runs, r) })
		}})
	}
	name := fl.Name + "-shards-cost"
	jobs = append(jobs, job{name: name, cost: costWin + time.Minute, run: func(t testing.TB, env bench.Env) {
		r := bench.ShardCostRun(t, env, fl, shardN, costWin, name)
		add(func(s *bench.ShardsResult) { s.Cost = append(s.Cost, r) })
	}})
	return jobs
}

// runShardScale runs the scale step alone (its Azurite and workers take the
// machine), after the other cluster jobs.
func (b *invocation) runShardScale(fl bench.Flavor) {
	ctx, runs, seed, logDir, progress, res := b.ctx, b.cfg.runs, b.cfg.seed, b.cfg.logDir, b.progress, &b.res
	n, m, err := parseShardScale(*shardScale)
	name := fmt.Sprintf("%s-shards-scale-%dx%d", fl.Name, n, m)
	fail := func(err error) {
		res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", name, err))
		progress(fmt.Sprintf("%s: FAILED: %v", name, err))
	}
	if err != nil {
		fail(err)
		return
	}
	lf, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		fail(err)
		return
	}
	defer lf.Close()
	crashes := max(2, runs/10)
	env := bench.Env{Ctx: ctx, Progress: progress, Rand: rand.New(rand.NewPCG(seed, 2000))}
	progress(fmt.Sprintf("%s: %d shards over %d workers on one Azurite, %d crashes", name, n, m, crashes))
	t0 := time.Now()
	var r bench.ShardScaleResult
	err = bench.RunJob(ctx, name, lf, func(t testing.TB) {
		bench.ShardScaleRun(t, env, fl, n, m, crashes, 30*time.Second, name, &r)
	})
	if err != nil {
		r.Err = err.Error()
	}
	if res.Shards == nil {
		res.Shards = &bench.ShardsResult{}
	}
	res.Shards.Scale = append(res.Shards.Scale, r) // what was measured, also after a failure
	if err != nil {
		fail(fmt.Errorf("after %v: %w (log %s)", time.Since(t0).Round(time.Second), err, lf.Name()))
		return
	}
	progress(fmt.Sprintf("%s: done in %v", name, time.Since(t0).Round(time.Second)))
}

// parseShardScale reads "NxM".
func parseShardScale(s string) (n, m int, err error) {
	a, b, ok := strings.Cut(s, "x")
	n, err1 := strconv.Atoi(a)
	m, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || m < 2 {
		return 0, 0, fmt.Errorf("-shard-scale %q: want NxM, N ≥ 1 shards and M ≥ 2 workers", s)
	}
	return n, m, nil
}
