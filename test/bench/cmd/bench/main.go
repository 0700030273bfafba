// Command bench runs the benchmarks on a local Azurite and writes
// docs/benchmarks.md and its plots (see package bench and test/bench/bench.mk):
//
//	go run ./test/bench/cmd/bench -worker bin/blobleader -sample bin/sampleworker -runs 20
//
// Phases: failover (crash, both parameter sets), graceful (both), schedule
// (leaderless time under the fixed fault schedule, both), cost (storage ops
// per worker-hour and footprint, both), scale (3…300 contenders in process),
// run (run mode), shards (shards.go; shards-scale runs only its
// scale step), takeover (early takeover: host loss on the fast profile
// beside the default, the fault schedule's breaks by cause, the cost of
// both; written to <plots>/takeover.md).
// Cluster phases run up to -parallel clusters at a time; scale runs alone
// afterwards so its CPU figures are its own.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/bench"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/worker/azuritetest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

type job struct {
	name   string
	cost   time.Duration // estimated, for packing the lanes longest first
	run    func(t testing.TB, env bench.Env)
	seedIx uint64
}

func run() error {
	var (
		runs       = flag.Int("runs", envInt("BENCH_RUNS", 20), "runs per failover figure (crash and graceful, each parameter set) [BENCH_RUNS]")
		parallel   = flag.Int("parallel", envInt("BENCH_PARALLEL", 4), "clusters at a time in the cluster phases [BENCH_PARALLEL]")
		seed       = flag.Uint64("seed", uint64(envInt("BENCH_SEED", 1)), "seed of the random settle delays [BENCH_SEED]")
		workerBin  = flag.String("worker", "bin/blobleader", "blobleader (worker) binary")
		sampleBin  = flag.String("sample", "bin/sampleworker", "sample-baseline binary (test/bench/cmd/sampleworker)")
		docPath    = flag.String("doc", "docs/benchmarks.md", "markdown to write")
		plotDir    = flag.String("plots", "docs/bench", "directory for the plots and results.json (emptied of *.svg first)")
		logDir     = flag.String("logs", "out/bench", "directory for per-job logs")
		phasesFlag = flag.String("phases", envStr("BENCH_PHASES", "failover,graceful,schedule,cost,scale,run,run-freeze,run-faults,blocked,shards"), "phases to run [BENCH_PHASES]")
		scaleNs    = flag.String("scale", envStr("BENCH_SCALE", "3,30,100,300"), "contender counts of the scale phase [BENCH_SCALE]")
		scaleWin   = flag.Duration("scale-window", 20*time.Second, "steady window of each scale step")
		costWin    = flag.Duration("cost-window", 0, "steady window of the cost phase (0: max(60s, 6s × runs))")
		rerender   = flag.String("rerender", "", "only render -doc and the plots again from this results.json (no measuring)")
	)
	flag.Parse()
	if *rerender != "" {
		return renderOnly(*rerender, *docPath, *plotDir)
	}
	if *runs < 1 || *parallel < 1 {
		return errors.New("-runs and -parallel must be ≥ 1")
	}
	phases := map[string]bool{}
	for _, p := range strings.Split(*phasesFlag, ",") {
		if p = strings.TrimSpace(p); p != "" {
			phases[p] = true
		}
	}
	if phases["shards"] || phases["shards-scale"] {
		if _, _, err := parseShardScale(*shardScale); err != nil {
			return err
		}
	}
	var ns []int
	for _, s := range strings.Split(*scaleNs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 {
			return fmt.Errorf("-scale %q: want contender counts ≥ 2", *scaleNs)
		}
		ns = append(ns, n)
	}
	if *costWin == 0 {
		*costWin = max(60*time.Second, time.Duration(*runs)*6*time.Second)
	}
	for _, p := range []*string{workerBin, sampleBin} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("binary: %w (make bench builds it)", err)
		}
		*p = abs
	}
	if err := os.MkdirAll(*logDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(*plotDir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(*plotDir, "*.svg"))
	for _, f := range append(old, filepath.Join(*plotDir, "results.json")) {
		os.Remove(f)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	var outMu sync.Mutex
	progress := func(s string) {
		outMu.Lock()
		defer outMu.Unlock()
		el := time.Since(start).Round(time.Second)
		fmt.Printf("[%02d:%02d] %s\n", int(el.Minutes()), int(el.Seconds())%60, s)
	}

	ours, sample := bench.Ours(*workerBin), bench.Sample(*sampleBin)
	res := bench.Results{Binaries: map[string]int64{}}
	for name, p := range map[string]string{"worker": *workerBin, "sampleworker": *sampleBin} {
		if fi, err := os.Stat(p); err == nil {
			res.Binaries[name] = fi.Size()
		}
	}
	res.Machine = machine(*runs, *parallel, *seed, start)
	for _, p := range []string{"failover", "graceful", "schedule", "cost", "scale", "run", "run-freeze", "run-faults", "blocked", "shards", "shards-scale", "takeover"} {
		if phases[p] {
			res.Machine.Phases = append(res.Machine.Phases, p)
		}
	}
	res.Machine.Command = fmt.Sprintf("BENCH_RUNS=%d BENCH_PARALLEL=%d BENCH_SEED=%d make bench", *runs, *parallel, *seed)

	// Jobs of the cluster phases.
	var jobs []job
	var mu sync.Mutex
	addRun := func(r bench.RunResult) {
		mu.Lock()
		res.Runs = append(res.Runs, r)
		mu.Unlock()
	}
	chunks := func(n, size int) []int {
		var out []int
		for n > 0 {
			c := min(n, size)
			out = append(out, c)
			n -= c
		}
		return out
	}
	failoverJobs := func(fl bench.Flavor, kind string, chunk int, perTrial time.Duration) {
		for i, n := range chunks(*runs, chunk) {
			name := fmt.Sprintf("%s-%s-%d", fl.Name, kind, i+1)
			jobs = append(jobs, job{name: name, cost: time.Duration(n) * perTrial, run: func(t testing.TB, env bench.Env) {
				addRun(bench.FailoverRun(t, env, fl, kind, n, name))
			}})
		}
	}
	scheduleJob := func(fl bench.Flavor) {
		name := fl.Name + "-schedule"
		jobs = append(jobs, job{name: name, cost: time.Duration(len(bench.Schedule())) * bench.SlotLength, run: func(t testing.TB, env bench.Env) {
			addRun(bench.ScheduleRun(t, env, fl, name))
		}})
	}
	costJob := func(fl bench.Flavor) {
		jobs = append(jobs, job{name: fl.Name + "-cost", cost: *costWin + 30*time.Second, run: func(t testing.TB, env bench.Env) {
			c := bench.CostRun(t, env, fl, *costWin)
			mu.Lock()
			res.Cost = append(res.Cost, c)
			mu.Unlock()
		}})
	}
	fast := bench.Fast(*workerBin)
	if phases["takeover"] {
		// Early takeover (docs/failover.md#early-takeover): host loss with
		// the fast profile beside the default, the fault schedule on the
		// fast profile (breaks by cause), and the cost of both.
		failoverJobs(fast, checker.FaultCrash, 10, 10*time.Second)
		if !phases["failover"] {
			failoverJobs(ours, checker.FaultCrash, 10, 18*time.Second)
		}
		scheduleJob(fast)
		costJob(fast)
		if !phases["cost"] {
			costJob(ours)
		}
	}
	if phases["failover"] {
		failoverJobs(ours, checker.FaultCrash, 10, 18*time.Second)
		failoverJobs(sample, checker.FaultCrash, 7, 28*time.Second)
	}
	if phases["graceful"] {
		failoverJobs(ours, checker.FaultGraceful, 20, 5*time.Second)
		failoverJobs(sample, checker.FaultGraceful, 10, 14*time.Second)
	}
	if phases["schedule"] {
		scheduleJob(ours)
		scheduleJob(sample)
	}
	if phases["cost"] {
		costJob(ours)
		costJob(sample)
	}
	if phases["run"] {
		jobs = append(jobs, job{name: "ours-run-command-crash", cost: 20*time.Second + time.Duration(*runs)*3*time.Second, run: func(t testing.TB, env bench.Env) {
			m := bench.RunModeRun(t, env, ours, *runs, 20*time.Second, "ours-run-command-crash")
			mu.Lock()
			res.RunMode = append(res.RunMode, m)
			mu.Unlock()
		}})
	}
	if phases["run-freeze"] {
		jobs = append(jobs, job{name: "ours-run-supervisor-freeze", cost: time.Duration(*runs) * 20 * time.Second, run: func(t testing.TB, env bench.Env) {
			trials, violations := bench.RunModeFreezeRun(t, env, ours, *runs, "ours-run-supervisor-freeze")
			mu.Lock()
			res.RunFreeze, res.RunFreezeViolations = trials, violations
			mu.Unlock()
		}})
	}
	if phases["run-faults"] {
		// One job per host-side fault on a supervisor and its guard.
		for _, f := range bench.RunFaults {
			name := "ours-run-fault-" + strings.NewReplacer(" ", "-", ",", "", "/", "").Replace(f.Name)
			jobs = append(jobs, job{name: name, cost: time.Duration(*runs) * 22 * time.Second, run: func(t testing.TB, env bench.Env) {
				trials := bench.RunModeFaultRun(t, env, ours, f, *runs, name)
				mu.Lock()
				res.RunFaults = append(res.RunFaults, trials...)
				mu.Unlock()
			}})
		}
	}
	if phases["blocked"] {
		// 5 leaderships with the output blocked, 5 without (about 25 s each).
		n := max(1, min(*runs, 5))
		jobs = append(jobs, job{name: "ours-run-blocked-output", cost: time.Duration(2*n) * 25 * time.Second, run: func(t testing.TB, env bench.Env) {
			m := bench.BlockedOutputRun(t, env, ours, n, "ours-run-blocked-output")
			mu.Lock()
			res.BlockedOutput = append(res.BlockedOutput, m)
			mu.Unlock()
		}})
	}
	if phases["shards"] {
		jobs = append(jobs, shardJobs(ours, *runs, *costWin, &mu, &res)...)
	}
	for i := range jobs {
		jobs[i].seedIx = uint64(i) // before sorting: seeds follow the fixed job order
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(b.cost, a.cost) })
	var est time.Duration
	for _, j := range jobs {
		est += j.cost
	}
	if len(jobs) > 0 {
		progress(fmt.Sprintf("%d cluster jobs, %d at a time, about %v of cluster time; logs in %s", len(jobs), *parallel, est.Round(time.Second), *logDir))
	}
	sem := make(chan struct{}, *parallel)
	var wg sync.WaitGroup
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			lf, err := os.Create(filepath.Join(*logDir, j.name+".log"))
			if err != nil {
				mu.Lock()
				res.Errors = append(res.Errors, err.Error())
				mu.Unlock()
				return
			}
			defer lf.Close()
			env := bench.Env{Ctx: ctx, PlotDir: *plotDir, Progress: progress, Rand: rand.New(rand.NewPCG(*seed, j.seedIx))}
			t0 := time.Now()
			progress(j.name + ": start")
			err = bench.RunJob(ctx, j.name, lf, func(t testing.TB) { j.run(t, env) })
			if err != nil {
				progress(fmt.Sprintf("%s: FAILED after %v: %v (log %s)", j.name, time.Since(t0).Round(time.Second), err, lf.Name()))
				mu.Lock()
				res.Errors = append(res.Errors, err.Error())
				mu.Unlock()
				return
			}
			progress(fmt.Sprintf("%s: done in %v", j.name, time.Since(t0).Round(time.Second)))
		})
	}
	wg.Wait()

	if phases["scale"] && ctx.Err() == nil {
		crashes := max(2, *runs/5)
		for i, n := range ns {
			if ctx.Err() != nil {
				break
			}
			progress(fmt.Sprintf("scale-%d: %d contenders in process, %d crashes", n, n, crashes))
			env := bench.Env{Ctx: ctx, Progress: progress, Rand: rand.New(rand.NewPCG(*seed, uint64(1000+i)))}
			s, err := bench.ScaleRun(ctx, env, n, crashes, *scaleWin)
			if err != nil {
				s.Err = err.Error()
				res.Errors = append(res.Errors, fmt.Sprintf("scale-%d: %v", n, err))
				progress(fmt.Sprintf("scale-%d: FAILED: %v", n, err))
			}
			res.Scale = append(res.Scale, s)
		}
	}

	if (phases["shards"] || phases["shards-scale"]) && ctx.Err() == nil {
		runShardScale(ctx, ours, *runs, *seed, *logDir, progress, &res)
	}

	// Stable order for the document and the JSON.
	slices.SortFunc(res.Runs, func(a, b bench.RunResult) int { return cmp.Compare(a.Job, b.Job) })
	slices.SortFunc(res.Cost, func(a, b bench.CostResult) int { return cmp.Compare(a.Flavor, b.Flavor) })
	slices.Sort(res.Errors)
	res.Machine.WallS = time.Since(start).Seconds()
	rel, err := filepath.Rel(filepath.Dir(*docPath), *plotDir)
	if err != nil {
		return err
	}
	if phases["takeover"] {
		sec := bench.TakeoverSection(res)
		if err := os.WriteFile(filepath.Join(*plotDir, "takeover.md"), []byte(sec), 0o644); err != nil {
			return err
		}
		fmt.Print(sec)
	}
	if err := bench.Render(res, *docPath, *plotDir, filepath.ToSlash(rel)); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("results.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(*plotDir, "results.json"), raw, 0o644); err != nil {
		return err
	}
	progress(fmt.Sprintf("wrote %s and %s (%d errors)", *docPath, *plotDir, len(res.Errors)))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("%d jobs failed (see the doc's Errors section and %s)", len(res.Errors), *logDir)
	}
	return nil
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func envStr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// machine records where the numbers were made.
func machine(runs, parallel int, seed uint64, start time.Time) bench.Machine {
	m := bench.Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Started: start.UTC(), Runs: runs, Parallel: parallel, Seed: seed}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	m.Azurite = "unknown"
	if bin, err := azuritetest.Binary(); err == nil {
		if p, err := filepath.EvalSymlinks(bin); err == nil {
			for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
				b, err := os.ReadFile(filepath.Join(d, "package.json"))
				if err != nil {
					continue
				}
				var pkg struct{ Name, Version string }
				if json.Unmarshal(b, &pkg) == nil && pkg.Name == "azurite" {
					m.Azurite = "azurite " + pkg.Version
					break
				}
			}
		}
	}
	return m
}

// renderOnly rebuilds the document and plots from a saved results.json (after
// a change to the text or the plots; the timelines are kept as they are).
func renderOnly(resultsPath, docPath, plotDir string) error {
	raw, err := os.ReadFile(resultsPath)
	if err != nil {
		return err
	}
	var res bench.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("%s: %w", resultsPath, err)
	}
	rel, err := filepath.Rel(filepath.Dir(docPath), plotDir)
	if err != nil {
		return err
	}
	return bench.Render(res, docPath, plotDir, filepath.ToSlash(rel))
}
