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
// both; written to <plots>/takeover.md), locks (named resource locks
// through the library and HTTP; <plots>/locks.md and §11). Asked for alone,
// takeover and locks leave the document as it is.
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
	"maps"
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

// step is a phase that takes the machine alone, after the cluster jobs, so
// its CPU and latency figures are its own.
type step struct {
	name string
	run  func()
}

type job struct {
	name   string
	cost   time.Duration // estimated, for packing the lanes longest first
	run    func(t testing.TB, env bench.Env)
	seedIx uint64
}

// phaseOrder is the order phases are listed in (Machine.Phases).
var phaseOrder = []string{"failover", "graceful", "schedule", "cost", "scale", "run", "run-freeze", "run-faults", "blocked", "shards", "shards-scale", "takeover", "locks"}

// config is what the flags ask for.
type config struct {
	runs, parallel           int
	seed                     uint64
	workerBin, sampleBin     string
	prevBin                  string // -prev-worker: the previous early-takeover design's binary; "": not measured
	docPath, plotDir, logDir string
	phases                   map[string]bool
	scaleNs                  []int
	scaleWin, costWin        time.Duration
	rerender                 string // results.json to render again; empty: measure
}

func run() error {
	cfg, err := parseFlags()
	if err != nil {
		return err
	}
	if cfg.rerender != "" {
		return renderOnly(cfg.rerender, cfg.docPath, cfg.plotDir)
	}
	if err := cfg.prepare(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	b := newInvocation(ctx, cfg)
	b.planJobs()
	b.runJobs()
	for _, s := range b.steps {
		if ctx.Err() != nil {
			break
		}
		s.run()
	}
	return b.write()
}

// parseFlags reads the flags and their BENCH_* twins.
func parseFlags() (config, error) {
	var (
		runs       = flag.Int("runs", envInt("BENCH_RUNS", 20), "runs per failover figure (crash and graceful, each parameter set) [BENCH_RUNS]")
		parallel   = flag.Int("parallel", envInt("BENCH_PARALLEL", 4), "clusters at a time in the cluster phases [BENCH_PARALLEL]")
		seed       = flag.Uint64("seed", uint64(envInt("BENCH_SEED", 1)), "seed of the random settle delays [BENCH_SEED]")
		workerBin  = flag.String("worker", "bin/blobleader", "blobleader (worker) binary")
		prevBin    = flag.String("prev-worker", "", "takeover phase: a blobleader built before early takeover broke at once (it has --break-period), measured beside the fast profile; empty: not measured")
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
	cfg := config{runs: *runs, parallel: *parallel, seed: *seed, workerBin: *workerBin, sampleBin: *sampleBin, prevBin: *prevBin,
		docPath: *docPath, plotDir: *plotDir, logDir: *logDir, phases: map[string]bool{},
		scaleWin: *scaleWin, costWin: *costWin, rerender: *rerender}
	if cfg.rerender != "" {
		return cfg, nil
	}
	if cfg.runs < 1 || cfg.parallel < 1 {
		return cfg, errors.New("-runs and -parallel must be ≥ 1")
	}
	for _, p := range strings.Split(*phasesFlag, ",") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.phases[p] = true
		}
	}
	if _, err := checkPhases(cfg.phases); err != nil {
		return cfg, err
	}
	if cfg.phases["shards"] || cfg.phases["shards-scale"] {
		if _, _, err := parseShardScale(*shardScale); err != nil {
			return cfg, err
		}
	}
	for _, s := range strings.Split(*scaleNs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 {
			return cfg, fmt.Errorf("-scale %q: want contender counts ≥ 2", *scaleNs)
		}
		cfg.scaleNs = append(cfg.scaleNs, n)
	}
	if cfg.costWin == 0 {
		cfg.costWin = max(60*time.Second, time.Duration(cfg.runs)*6*time.Second)
	}
	return cfg, nil
}

// checkPhases refuses a phase name the bench does not know (a misspelt one
// would measure nothing) and returns the phases in phaseOrder.
func checkPhases(phases map[string]bool) ([]string, error) {
	var known []string
	for _, p := range phaseOrder {
		if phases[p] {
			known = append(known, p)
		}
	}
	for p := range phases {
		if !slices.Contains(phaseOrder, p) {
			return nil, fmt.Errorf("-phases: unknown phase %q (known: %s)", p, strings.Join(phaseOrder, ", "))
		}
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("-phases: no phase (known: %s)", strings.Join(phaseOrder, ", "))
	}
	return known, nil
}

// onlySeparatePhases reports whether every phase asked for is one measured
// by a separate invocation (takeover, locks), which leaves the document as
// it is.
func onlySeparatePhases(phases map[string]bool) bool {
	for p := range phases {
		if p != "takeover" && p != "locks" {
			return false
		}
	}
	return true
}

// prepare makes the binaries' paths absolute (they must exist), creates the
// log and plot directories and empties the plot directory of the previous
// run's plots and results.
func (c *config) prepare() error {
	for _, p := range []*string{&c.workerBin, &c.sampleBin} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("binary: %w (make bench builds it)", err)
		}
		*p = abs
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(c.plotDir, 0o755); err != nil {
		return err
	}
	if onlySeparatePhases(c.phases) {
		return nil // the document's plots and results stay (write)
	}
	old, _ := filepath.Glob(filepath.Join(c.plotDir, "*.svg"))
	for _, f := range append(old, filepath.Join(c.plotDir, "results.json")) {
		os.Remove(f)
	}
	return nil
}

// invocation is one measuring run of the bench: its config, the results
// the jobs add to (under mu), and the cluster jobs planned.
type invocation struct {
	cfg                config
	ctx                context.Context
	start              time.Time
	outMu              sync.Mutex // one progress line at a time
	mu                 sync.Mutex // guards res while jobs run
	res                bench.Results
	jobs               []job
	steps              []step // run alone, in order, after the jobs
	ours, sample, fast bench.Flavor
}

func newInvocation(ctx context.Context, cfg config) *invocation {
	b := &invocation{cfg: cfg, ctx: ctx, start: time.Now(),
		ours: bench.Ours(cfg.workerBin), sample: bench.Sample(cfg.sampleBin), fast: bench.Fast(cfg.workerBin)}
	b.res = bench.Results{Binaries: map[string]int64{}}
	for name, p := range map[string]string{"worker": cfg.workerBin, "sampleworker": cfg.sampleBin} {
		if fi, err := os.Stat(p); err == nil {
			b.res.Binaries[name] = fi.Size()
		}
	}
	b.res.Machine = machine(cfg.runs, cfg.parallel, cfg.seed, b.start)
	for _, p := range phaseOrder {
		if cfg.phases[p] {
			b.res.Machine.Phases = append(b.res.Machine.Phases, p)
		}
	}
	b.res.Machine.Command = fmt.Sprintf("BENCH_RUNS=%d BENCH_PARALLEL=%d BENCH_SEED=%d make bench", cfg.runs, cfg.parallel, cfg.seed)
	return b
}

// progress prints one line with the time since the start.
func (b *invocation) progress(s string) {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	el := time.Since(b.start).Round(time.Second)
	fmt.Printf("[%02d:%02d] %s\n", int(el.Minutes()), int(el.Seconds())%60, s)
}

// record changes the results under the lock the running jobs share.
func (b *invocation) record(f func(res *bench.Results)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.res)
}

func (b *invocation) add(name string, cost time.Duration, run func(t testing.TB, env bench.Env)) {
	b.jobs = append(b.jobs, job{name: name, cost: cost, run: run})
}

// planJobs lists the cluster jobs of the phases asked for, then the steps
// that run alone. The order is fixed: each job's seed follows its place in
// it.
func (b *invocation) planJobs() {
	ph := b.cfg.phases
	if ph["takeover"] {
		// Early takeover (docs/failover.md#early-takeover): host loss with
		// the fast profile beside the default, the fault schedule on the
		// fast profile (breaks by cause), and the cost of both.
		b.failoverJobs(b.fast, checker.FaultCrash, 10, 10*time.Second)
		if !ph["failover"] {
			b.failoverJobs(b.ours, checker.FaultCrash, 10, 18*time.Second)
		}
		slow := []bench.Flavor{b.fast}
		if b.cfg.prevBin != "" {
			prev := bench.Previous(b.cfg.prevBin)
			b.failoverJobs(prev, checker.FaultCrash, 10, 10*time.Second)
			slow = append(slow, prev)
		}
		for _, fl := range slow {
			for i := 1; i <= 3; i++ {
				name := fmt.Sprintf("%s-slow-storage-%d", fl.Name, i)
				b.add(name, bench.SlowWindow+30*time.Second, func(t testing.TB, env bench.Env) {
					r := bench.SlowStorageRun(t, env, fl, name)
					b.record(func(res *bench.Results) { res.Runs = append(res.Runs, r) })
				})
			}
		}
		b.scheduleJob(b.fast)
		b.costJob(b.fast)
		if !ph["cost"] {
			b.costJob(b.ours)
		}
	}
	if ph["failover"] {
		b.failoverJobs(b.ours, checker.FaultCrash, 10, 18*time.Second)
		b.failoverJobs(b.sample, checker.FaultCrash, 7, 28*time.Second)
	}
	if ph["graceful"] {
		b.failoverJobs(b.ours, checker.FaultGraceful, 20, 5*time.Second)
		b.failoverJobs(b.sample, checker.FaultGraceful, 10, 14*time.Second)
	}
	if ph["schedule"] {
		b.scheduleJob(b.ours)
		b.scheduleJob(b.sample)
	}
	if ph["cost"] {
		b.costJob(b.ours)
		b.costJob(b.sample)
	}
	b.runModeJobs()
	if ph["shards"] {
		b.jobs = append(b.jobs, b.shardJobs(b.ours)...)
	}
	if ph["scale"] {
		b.steps = append(b.steps, step{"scale", b.runScale})
	}
	if ph["shards"] || ph["shards-scale"] {
		b.steps = append(b.steps, step{"shards-scale", func() { b.runShardScale(b.ours) }})
	}
	if ph["locks"] {
		b.steps = append(b.steps, step{"locks", b.runLocks})
	}
}

// runLocks runs the locks phase alone: named resource locks through the
// library and through a real `blobleader locks`, on a private Azurite.
func (b *invocation) runLocks() {
	b.progress("locks: named resource locks, library and HTTP")
	r, err := bench.LocksRun(b.ctx, b.cfg.workerBin, b.progress)
	if err != nil {
		b.res.Errors = append(b.res.Errors, fmt.Sprintf("locks: %v", err))
		b.progress(fmt.Sprintf("locks: FAILED: %v", err))
	}
	b.res.Locks = &r // what was measured, also after a failure
}

// failoverJobs splits the runs of one failover figure into jobs of at most
// chunk trials.
func (b *invocation) failoverJobs(fl bench.Flavor, kind string, chunk int, perTrial time.Duration) {
	for i, n := range chunks(b.cfg.runs, chunk) {
		name := fmt.Sprintf("%s-%s-%d", fl.Name, kind, i+1)
		b.add(name, time.Duration(n)*perTrial, func(t testing.TB, env bench.Env) {
			r := bench.FailoverRun(t, env, fl, kind, n, name)
			b.record(func(res *bench.Results) { res.Runs = append(res.Runs, r) })
		})
	}
}

// chunks splits n into parts of at most size.
func chunks(n, size int) []int {
	var out []int
	for n > 0 {
		c := min(n, size)
		out = append(out, c)
		n -= c
	}
	return out
}

func (b *invocation) scheduleJob(fl bench.Flavor) {
	name := fl.Name + "-schedule"
	b.add(name, time.Duration(len(bench.Schedule()))*bench.SlotLength, func(t testing.TB, env bench.Env) {
		r := bench.ScheduleRun(t, env, fl, name)
		b.record(func(res *bench.Results) { res.Runs = append(res.Runs, r) })
	})
}

func (b *invocation) costJob(fl bench.Flavor) {
	b.add(fl.Name+"-cost", b.cfg.costWin+30*time.Second, func(t testing.TB, env bench.Env) {
		c := bench.CostRun(t, env, fl, b.cfg.costWin)
		b.record(func(res *bench.Results) { res.Cost = append(res.Cost, c) })
	})
}

// runModeJobs plans the run-mode phases: command crash, frozen supervisor,
// one job per host-side fault, blocked output.
func (b *invocation) runModeJobs() {
	ph, runs, ours := b.cfg.phases, b.cfg.runs, b.ours
	if ph["run"] {
		b.add("ours-run-command-crash", 20*time.Second+time.Duration(runs)*3*time.Second, func(t testing.TB, env bench.Env) {
			m := bench.RunModeRun(t, env, ours, runs, 20*time.Second, "ours-run-command-crash")
			b.record(func(res *bench.Results) { res.RunMode = append(res.RunMode, m) })
		})
	}
	if ph["run-freeze"] {
		b.add("ours-run-supervisor-freeze", time.Duration(runs)*20*time.Second, func(t testing.TB, env bench.Env) {
			trials, violations := bench.RunModeFreezeRun(t, env, ours, runs, "ours-run-supervisor-freeze")
			b.record(func(res *bench.Results) { res.RunFreeze, res.RunFreezeViolations = trials, violations })
		})
	}
	if ph["run-faults"] {
		for _, f := range bench.RunFaults {
			name := "ours-run-fault-" + strings.NewReplacer(" ", "-", ",", "", "/", "").Replace(f.Name)
			b.add(name, time.Duration(runs)*22*time.Second, func(t testing.TB, env bench.Env) {
				trials := bench.RunModeFaultRun(t, env, ours, f, runs, name)
				b.record(func(res *bench.Results) { res.RunFaults = append(res.RunFaults, trials...) })
			})
		}
	}
	if ph["blocked"] {
		// 5 leaderships with the output blocked, 5 without (about 25 s each).
		n := max(1, min(runs, 5))
		b.add("ours-run-blocked-output", time.Duration(2*n)*25*time.Second, func(t testing.TB, env bench.Env) {
			m := bench.BlockedOutputRun(t, env, ours, n, "ours-run-blocked-output")
			b.record(func(res *bench.Results) { res.BlockedOutput = append(res.BlockedOutput, m) })
		})
	}
}

// runJobs runs the cluster jobs, longest first, up to parallel at a time;
// a job that fails adds its error to the results.
func (b *invocation) runJobs() {
	for i := range b.jobs {
		b.jobs[i].seedIx = uint64(i) // before sorting: seeds follow the fixed job order
	}
	slices.SortStableFunc(b.jobs, func(x, y job) int { return cmp.Compare(y.cost, x.cost) })
	var est time.Duration
	for _, j := range b.jobs {
		est += j.cost
	}
	if len(b.jobs) > 0 {
		b.progress(fmt.Sprintf("%d cluster jobs, %d at a time, about %v of cluster time; logs in %s", len(b.jobs), b.cfg.parallel, est.Round(time.Second), b.cfg.logDir))
	}
	sem := make(chan struct{}, b.cfg.parallel)
	var wg sync.WaitGroup
	for _, j := range b.jobs {
		if b.ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if b.ctx.Err() != nil {
				return
			}
			b.runJob(j)
		})
	}
	wg.Wait()
}

// runJob runs one cluster job with its own log file and seeded randomness.
func (b *invocation) runJob(j job) {
	fail := func(err error) { b.record(func(res *bench.Results) { res.Errors = append(res.Errors, err.Error()) }) }
	lf, err := os.Create(filepath.Join(b.cfg.logDir, j.name+".log"))
	if err != nil {
		fail(err)
		return
	}
	defer lf.Close()
	env := bench.Env{Ctx: b.ctx, PlotDir: b.cfg.plotDir, Progress: b.progress, Rand: rand.New(rand.NewPCG(b.cfg.seed, j.seedIx))}
	t0 := time.Now()
	b.progress(j.name + ": start")
	if err := bench.RunJob(b.ctx, j.name, lf, func(t testing.TB) { j.run(t, env) }); err != nil {
		b.progress(fmt.Sprintf("%s: FAILED after %v: %v (log %s)", j.name, time.Since(t0).Round(time.Second), err, lf.Name()))
		fail(err)
		return
	}
	b.progress(fmt.Sprintf("%s: done in %v", j.name, time.Since(t0).Round(time.Second)))
}

// runScale runs the in-process scale steps alone, after the cluster jobs,
// so their CPU figures are their own.
func (b *invocation) runScale() {
	crashes := max(2, b.cfg.runs/5)
	for i, n := range b.cfg.scaleNs {
		if b.ctx.Err() != nil {
			break
		}
		b.progress(fmt.Sprintf("scale-%d: %d contenders in process, %d crashes", n, n, crashes))
		env := bench.Env{Ctx: b.ctx, Progress: b.progress, Rand: rand.New(rand.NewPCG(b.cfg.seed, uint64(1000+i)))}
		s, err := bench.ScaleRun(b.ctx, env, n, crashes, b.cfg.scaleWin)
		if err != nil {
			s.Err = err.Error()
			b.res.Errors = append(b.res.Errors, fmt.Sprintf("scale-%d: %v", n, err))
			b.progress(fmt.Sprintf("scale-%d: FAILED: %v", n, err))
		}
		b.res.Scale = append(b.res.Scale, s)
	}
}

// write puts the results in a stable order and writes the takeover
// section (phase takeover), the document, its plots and results.json. Its
// error says whether the invocation was interrupted or jobs failed.
func (b *invocation) write() error {
	res, cfg := &b.res, b.cfg
	slices.SortFunc(res.Runs, func(x, y bench.RunResult) int { return cmp.Compare(x.Job, y.Job) })
	slices.SortFunc(res.Cost, func(x, y bench.CostResult) int { return cmp.Compare(x.Flavor, y.Flavor) })
	slices.Sort(res.Errors)
	res.Machine.WallS = time.Since(b.start).Seconds()
	rel, err := filepath.Rel(filepath.Dir(cfg.docPath), cfg.plotDir)
	if err != nil {
		return err
	}
	sections := map[string]string{}
	if cfg.phases["takeover"] {
		sections["takeover.md"] = bench.TakeoverSection(*res)
	}
	if res.Locks != nil {
		sections["locks.md"] = bench.LocksSection(*res.Locks)
	}
	for name, sec := range sections {
		if err := os.WriteFile(filepath.Join(cfg.plotDir, name), []byte(sec), 0o644); err != nil {
			return err
		}
		fmt.Print(sec)
	}
	// The takeover and locks phases alone are separate invocations: their
	// sections go to <plots>/takeover.md and locks.md, their raw results to
	// <plots>/separate-results.json; the document, its plots and
	// results.json stay as they are.
	if onlySeparatePhases(cfg.phases) {
		raw, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return fmt.Errorf("separate-results.json: %w", err)
		}
		if err := os.WriteFile(filepath.Join(cfg.plotDir, "separate-results.json"), raw, 0o644); err != nil {
			return err
		}
		b.progress(fmt.Sprintf("wrote %s and separate-results.json (%d errors)", strings.Join(slices.Sorted(maps.Keys(sections)), ", "), len(res.Errors)))
		return b.failed()
	}
	if err := bench.Render(*res, cfg.docPath, cfg.plotDir, filepath.ToSlash(rel)); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("results.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.plotDir, "results.json"), raw, 0o644); err != nil {
		return err
	}
	b.progress(fmt.Sprintf("wrote %s and %s (%d errors)", cfg.docPath, cfg.plotDir, len(res.Errors)))
	return b.failed()
}

// failed says whether the invocation was interrupted or jobs failed.
func (b *invocation) failed() error {
	if b.ctx.Err() != nil {
		return b.ctx.Err()
	}
	if len(b.res.Errors) > 0 {
		return fmt.Errorf("%d jobs failed (see the errors above, the doc's Errors section and %s)", len(b.res.Errors), b.cfg.logDir)
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
