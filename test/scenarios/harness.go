package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/test/report"
	"github.com/blobleader/blobleader/worker/ledger"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// Environment knobs (see the package doc).
const (
	EnvRepeat   = "BLOBLEADER_CHAOS_REPEAT"
	EnvDuration = "BLOBLEADER_CHAOS_DURATION"
	EnvSeed     = "BLOBLEADER_CHAOS_SEED"
	EnvOut      = "BLOBLEADER_CHAOS_OUT"
	EnvEpsilon  = "BLOBLEADER_CHAOS_EPSILON"
	// EnvKeepFailed names a directory where a failed run keeps its
	// evidence (histories, logs, client lines, probe records) when
	// EnvOut keeps no files: make test sets it, so a fresh clone's red
	// run can be read after its temp dirs are gone.
	EnvKeepFailed = "BLOBLEADER_CHAOS_KEEP_FAILED"
)

// Backend makes a cluster with n workers started and ready. The local
// backend is the default; another backend replaces it in its own test file.
type Backend func(t *testing.T, n int, opts ...cluster.Option) cluster.Cluster

// Local starts a local cluster (Azurite and worker processes) with n workers.
func Local(t *testing.T, n int, opts ...cluster.Option) cluster.Cluster {
	t.Helper()
	return LocalWith(cluster.Params{})(t, n, opts...)
}

// LocalWith is the local backend with the given timings (zero: the
// defaults).
func LocalWith(p cluster.Params) Backend {
	return func(t *testing.T, n int, opts ...cluster.Option) cluster.Cluster {
		t.Helper()
		return local(t, p, n, opts...)
	}
}

func local(t *testing.T, p cluster.Params, n int, opts ...cluster.Option) cluster.Cluster {
	t.Helper()
	c := cluster.NewLocal(t, cluster.LocalConfig{Params: p})
	keepOnFailure(t, c)
	if n > 0 {
		c.Prepare(opts...) // a negative control's build is no part of the start's minute
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := c.Start(ctx, n, opts...); err != nil {
			t.Fatalf("start %d workers: %v", n, err)
		}
	}
	return c
}

// Scenario is one named chaos scenario.
type Scenario struct {
	Name    string // the test's name, for the report file
	Workers int    // workers started before Run
	// Run injects the scenario's faults, waits on their effects (failing t
	// on a broken expectation) and leaves the healing to Judge.
	Run func(t *testing.T, c cluster.Cluster)
	// Requires is the minimum evidence the run must hold (the checker fails
	// a run without it, rather than passing a fault that missed).
	Requires checker.Requirements
	// Opts start the workers (e.g. cluster.BlockableOutput); none by default.
	Opts []cluster.Option
}

// Repeat is how often each scenario runs ($BLOBLEADER_CHAOS_REPEAT, default 1).
func Repeat(t *testing.T) int {
	t.Helper()
	v := os.Getenv(EnvRepeat)
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", EnvRepeat, v)
	}
	return n
}

// repeatRuns runs body Repeat(t) times: in t itself when once (make test),
// else as subtests run1, run2, … (make chaos). Each run that body judged
// inconclusive is run again (retryInconclusive).
func repeatRuns(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	n := Repeat(t)
	if n == 1 {
		retryInconclusive(t, body)
		return
	}
	for i := 1; i <= n; i++ {
		t.Run(fmt.Sprintf("run%d", i), func(t *testing.T) { retryInconclusive(t, body) })
	}
}

// RunScenario runs s on backend Repeat(t) times, each on a fresh cluster, and
// fails t on any violation (an inconclusive run is retried).
func RunScenario(t *testing.T, backend Backend, s Scenario) {
	t.Helper()
	repeatRuns(t, func(t *testing.T) {
		c := backend(t, s.Workers, s.Opts...)
		s.Run(t, c)
		_, res := JudgeRequiring(t, c, reportName(t), s.Requires)
		judged(t, "verdict", res.Verdict)
	})
}

// CheckerParams are the checker's parameters for a cluster's timings. The
// failover slack ε is the checker's default (1 s) unless
// $BLOBLEADER_CHAOS_EPSILON sets another (for a machine slower than this one).
func CheckerParams(p cluster.Params) checker.Params {
	cp := checker.DefaultParams()
	if v := os.Getenv(EnvEpsilon); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			cp.Epsilon = d
		}
	}
	cp.Timing = p.Timing
	cp.TakeoverAfter = p.TakeoverAfter
	return cp
}

// livenessWindow is long enough that a contending worker certainly touches
// storage in it (checker.ContendWindow: L2 judges the same window).
func livenessWindow(p cluster.Params) time.Duration {
	return checker.ContendWindow(CheckerParams(p))
}

// Judge heals the cluster, waits for a leader, collects the run (histories,
// faults, ledger, liveness), checks it and writes the report. It fails t when
// the run cannot be collected; violations are in the Result for the caller.
// It requires no evidence beyond every started worker's history; scenarios
// state theirs with JudgeRequiring.
func Judge(t *testing.T, c cluster.Cluster, name string) (checker.Run, checker.Result) {
	t.Helper()
	return JudgeRequiring(t, c, name, checker.Requirements{})
}

// JudgeRequiring is Judge with the minimum evidence the run must hold.
func JudgeRequiring(t *testing.T, c cluster.Cluster, name string, req checker.Requirements) (checker.Run, checker.Result) {
	t.Helper()
	p := c.Params()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, run := healAndCollect(ctx, t, c)
	run.Requires = req
	res, err := checker.Check(run, CheckerParams(p))
	if err != nil {
		t.Fatalf("checker: %v", err)
	}
	out := OutDir(t)
	files, err := report.Write(out, name, run, res, report.Attempt(attemptNumber(t)))
	if err != nil {
		t.Errorf("report: %v", err)
	} else {
		t.Logf("report: %s (%s)", files.HTML, files.JSON)
	}
	if os.Getenv(EnvOut) != "" {
		keep(t, filepath.Join(out, name), h)
	}
	s := report.Summarize(run, res)
	t.Logf("run: %d events, %d terms, %d ledger entries, faults %v, %d violations, verdict %s (required: %s)", s.Events, s.Terms, s.LedgerEntries, s.FaultsByKind, s.Violations, s.Verdict, req)
	for _, r := range res.Inconclusive {
		t.Logf("inconclusive: %s", r)
	}
	for _, v := range res.Stalled {
		t.Logf("inconclusive: %s", v)
	}
	if run.Sched != nil {
		t.Logf("%s", schedLine(run.Sched))
		noteStall(t, run.Sched)
	}
	for _, fo := range res.Failovers {
		t.Logf("failover after %s on %s: %v (bound %v, basis %s)%s", fo.Kind, fo.Target, fo.Duration.Round(time.Millisecond), fo.Bound, fo.Basis, inconclusive(fo))
	}
	return run, res
}

// healAndCollect ends every fault still in force, waits out the liveness
// window and reads the cluster's history into the checker's Run.
func healAndCollect(ctx context.Context, t *testing.T, c cluster.Cluster) (cluster.History, checker.Run) {
	t.Helper()
	if err := c.Heal(ctx); err != nil {
		t.Errorf("heal: %v", err)
	}
	h, err := c.History(ctx, livenessWindow(c.Params()))
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	run, err := Collect(ctx, c, h)
	if err != nil {
		t.Fatalf("collect run: %v", err)
	}
	return h, run
}

func inconclusive(fo checker.Failover) string {
	if fo.Inconclusive == "" {
		return ""
	}
	return "; inconclusive: " + fo.Inconclusive
}

// Collect turns a cluster history into the checker's Run. A history file
// that does not exist is not read, but its worker stays in Run.Workers: the
// checker fails a started worker that left no history.
func Collect(ctx context.Context, c cluster.Cluster, h cluster.History) (checker.Run, error) {
	events, err := checker.ReadWrittenHistory(h.Files...)
	if err != nil {
		return checker.Run{}, err
	}
	ledger, err := ReadLedger(ctx, c.Storage(), c.LockBlob())
	if err != nil {
		return checker.Run{}, err
	}
	run := checker.Run{Events: events, Ledger: ledger, Start: h.Start, End: h.End}
	for _, f := range h.Faults {
		run.Faults = append(run.Faults, checker.Fault{Kind: f.Kind, Target: f.Target, Start: f.Start, End: f.End})
	}
	for _, w := range h.Workers {
		run.Workers = append(run.Workers, checker.Worker{Identity: w.Identity, Alive: w.Alive, Contending: w.Contending})
		if w.Slot != "" {
			if run.Slots == nil {
				run.Slots = map[string]string{}
			}
			run.Slots[w.Identity] = w.Slot
		}
	}
	for _, r := range h.Renews {
		run.GrantedRenews = append(run.GrantedRenews, checker.GrantedRenew{Slot: r.Slot, Path: r.Path, Arrived: r.Arrived, Answered: r.Answered})
	}
	run.LockPath, _ = blobPath(c, c.LockBlob())
	run.Sched = schedOf(c)
	return run, nil
}

// blobPath is the URL path of blob name in the cluster's container, as the
// workers' proxies record it (/account/container/name).
func blobPath(c cluster.Cluster, name string) (string, bool) {
	u, err := url.Parse(c.Storage().URL())
	if err != nil {
		return "", false
	}
	return path.Join(u.Path, name), true
}

// ReadLedger reads the reference task's ledger straight from storage: the
// append blobs under ledger.Prefix(blob), in segment order, one JSON entry a
// block (docs/architecture.md#the-fenced-ledger-the-reference-leader-task).
// No ledger yet is an empty ledger.
func ReadLedger(ctx context.Context, c *container.Client, blob string) ([]checker.LedgerEntry, error) {
	segs, err := ledger.ListSegments(ctx, c, blob) // in order; no container: none
	if err != nil {
		return nil, fmt.Errorf("list ledger: %w", err)
	}
	var out []checker.LedgerEntry
	for _, s := range segs {
		if s.NotALedger {
			continue // kept as found by the writer that went past it
		}
		name := s.Name
		resp, err := c.NewBlobClient(name).DownloadStream(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("read ledger segment %s: %w", name, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read ledger segment %s: %w", name, err)
		}
		es, err := checker.ParseLedger(strings.NewReader(string(b)))
		if err != nil {
			return nil, fmt.Errorf("ledger segment %s: %w", name, err)
		}
		out = append(out, es...)
	}
	return out, nil
}

// OutDir is where reports go: $BLOBLEADER_CHAOS_OUT, else the test's temp dir.
func OutDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv(EnvOut); d != "" {
		return d
	}
	return t.TempDir()
}

// reportName turns the test's name into a file name; a retry's reports
// are apart (…-attempt2).
func reportName(t *testing.T) string {
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	if n := attemptNumber(t); n > 1 {
		name += fmt.Sprintf("-attempt%d", n)
	}
	return name
}

// keep copies the histories and logs next to the report, so a kept report
// can be re-checked and debugged after the temp dir is gone.
func keep(t *testing.T, dir string, h cluster.History) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("keep: %v", err)
		return
	}
	for _, w := range h.Workers {
		for _, src := range []string{w.History, w.Log} {
			b, err := os.ReadFile(src)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o644)
			}
			if err != nil {
				t.Errorf("keep %s: %v", src, err)
			}
		}
	}
}

// keepOnFailure registers a cleanup that keeps c's histories and logs (and
// the extra files) in failedRunDir when t failed. Judge keeps the
// files of a run it judged; a test that fails before that — a wait that ran
// out, a t.Fatal in the scenario — must leave its evidence too (cleanups run
// before the temp dir goes). A failed run's log also says whether storage
// itself stalled during it (explainStorage), with or without an output
// directory.
func keepOnFailure(t *testing.T, c cluster.Cluster, extra ...string) {
	t.Helper()
	stopAtAttemptEnd(t, c.Stop)
	ifFailed(t, func(dir string, ok bool) {
		explainStorage(t.Logf, c)
		if os.Getenv(EnvOut) == "" {
			// Without an output directory the logs go with the temp dir:
			// their tails are the failure's first evidence.
			if lt, ok := c.(interface{ LogTails(n int) []string }); ok {
				for _, tail := range lt.LogTails(15) {
					t.Log(tail)
				}
			}
		}
		if ok {
			keepFailedRun(t, c, dir, extra...)
		}
	})
}

// ifFailed registers a cleanup that calls keep when t has failed by its
// end, with failedRunDir as it is now: each attempt of a retried scenario
// keeps its evidence under its own name, even though every attempt's
// cleanup runs at the test's end.
func ifFailed(t *testing.T, keep func(dir string, ok bool)) {
	dir, ok := failedRunDir(t) // now, while t's attempt is current
	t.Cleanup(func() {
		if t.Failed() {
			keep(dir, ok)
		}
	})
}

// failedRunDir is where a failed run keeps its evidence: beside its
// reports under EnvOut, else under EnvKeepFailed; ok is false when
// neither is set.
func failedRunDir(t *testing.T) (dir string, ok bool) {
	for _, env := range []string{EnvOut, EnvKeepFailed} {
		if d := os.Getenv(env); d != "" {
			return filepath.Join(d, reportName(t)), true
		}
	}
	return "", false
}

// keepFailedRun keeps c's histories and logs, the proxies' request logs, the
// storage probe's records and the extra files in dir.
func keepFailedRun(t *testing.T, c cluster.Cluster, dir string, extra ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := c.History(ctx, 0)
	if err != nil {
		t.Logf("keep the failed run's evidence: %v", err)
		return
	}
	keep(t, dir, h)
	if rl, ok := c.(interface{ WriteRequestLogs(dir string) error }); ok {
		if err := rl.WriteRequestLogs(dir); err != nil {
			t.Logf("keep the proxies' request logs: %v", err)
		}
	}
	if sp, ok := c.(interface{ WriteStorageProbe(dir string) error }); ok {
		if err := sp.WriteStorageProbe(dir); err != nil {
			t.Logf("keep the storage probe's records: %v", err)
		}
	}
	if sp, ok := c.(interface{ WriteSchedProbe(dir string) error }); ok {
		if err := sp.WriteSchedProbe(dir); err != nil {
			t.Logf("keep the CPU probe's records: %v", err)
		}
	}
	for _, f := range extra {
		if b, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
		}
	}
	t.Logf("failed run: histories and logs kept in %s", dir)
}

// storageProbe is the harness's own probe of c's storage, when c's backend
// runs one (the local backend: cluster.StorageProbe).
func storageProbe(c cluster.Cluster) (cluster.ProbeSummary, bool) {
	sp, ok := c.(interface{ StorageProbe() *cluster.StorageProbe })
	if !ok || sp.StorageProbe() == nil {
		return cluster.ProbeSummary{}, false
	}
	return sp.StorageProbe().Summary(), true
}

// storageProbeLine is the probe's one-line summary ("storage probe: …"),
// or "" for a backend without one.
func storageProbeLine(c cluster.Cluster) string {
	if s, ok := storageProbe(c); ok {
		return s.String()
	}
	return ""
}

// explainStorage logs, for a failed run, whether storage answered the
// harness's own probe throughout: each stall of a second or more with its
// times, so a failure in that window is read knowing the environment
// stalled too. It changes no verdict.
func explainStorage(logf func(format string, args ...any), c cluster.Cluster) {
	if sp, ok := c.(interface{ SchedProbe() *stalltest.Probe }); ok && sp.SchedProbe() != nil {
		logf("%s", sp.SchedProbe().Record())
	}
	if ps, ok := c.(interface{ ProcessStates() []string }); ok {
		logf("processes at the failure: %s", strings.Join(ps.ProcessStates(), "; "))
	}
	s, ok := storageProbe(c)
	if !ok {
		return
	}
	logf("%s", s)
	ex := s.Explanations()
	for _, line := range ex {
		logf("%s", line)
	}
	if len(ex) == 0 {
		logf("storage probe: storage (Azurite) answered every probe within %v: the environment's storage did not stall", s.Threshold)
	}
}

// schedLine is the CPU probe's line in a judged run's log.
func schedLine(s *checker.Sched) string {
	m := s.Max()
	return fmt.Sprintf("cpu probe: %d wakes of %v, %d ≥%v late, %v stalled in all, the longest %v at %s",
		s.Wakes, s.Tick, len(s.Late), s.Floor, s.Total().Round(time.Millisecond), m.Late().Round(time.Millisecond), m.Due.Format("15:04:05.000"))
}
