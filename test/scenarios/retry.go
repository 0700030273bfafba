package scenarios

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/stalltest"
)

// A scenario whose verdict is inconclusive — a timing bound missed by no
// more than the machine stalled (checker.Verdict.Stalled), or a history that
// lost records — proved nothing: it is run again on a fresh cluster, up to
// InconclusiveRetries times, and fails if it stays inconclusive
// (docs/chaos.md#a-busy-machine). A verdict that fails is never retried.

// InconclusiveRetries is how many times an inconclusive scenario runs again
// before it fails: three runs in all.
const InconclusiveRetries = 2

// EnvRetryLog names a file each retry appends one line to (the test's
// name, the attempt, the stall that explained the miss and the reason).
// `make test` sets it and prints the file at the end, so the CI log names
// every retry even though go test hides a passing test's own log.
const EnvRetryLog = stalltest.EnvRetryLog

// attempt is one run of a scenario under retryInconclusive.
type attempt struct {
	n int // 1 for the first run

	mu           sync.Mutex
	inconclusive []checker.Verdict // what judged was told was inconclusive
	whats        []string
	stops        []func() // the attempt's clusters and rigs, stopped when it ends
}

// attempts maps a *testing.T running under retryInconclusive to its
// current attempt.
var attempts sync.Map

func attemptOf(t *testing.T) *attempt {
	if a, ok := attempts.Load(t); ok {
		return a.(*attempt)
	}
	return nil
}

// attemptNumber is t's attempt (1 outside retryInconclusive).
func attemptNumber(t *testing.T) int {
	if a := attemptOf(t); a != nil {
		return a.n
	}
	return 1
}

// stopAtAttemptEnd registers stop to run when t's attempt ends, before a
// retry starts: a retry must not share the machine with the cluster it
// replaces. (t.Cleanup stops it again at the test's end; stops are safe
// twice.) Outside retryInconclusive it does nothing.
func stopAtAttemptEnd(t *testing.T, stop func()) {
	if a := attemptOf(t); a != nil {
		a.mu.Lock()
		a.stops = append(a.stops, stop)
		a.mu.Unlock()
	}
}

// judged passes a verdict on t: a failure fails t at once; an inconclusive
// verdict is left to retryInconclusive when t runs under it, and fails t
// otherwise — inconclusive is never a pass.
func judged(t *testing.T, what string, v checker.Verdict) {
	t.Helper()
	switch v.Outcome() {
	case checker.VerdictFail:
		t.Errorf("%s: %v", what, v.Err())
	case checker.VerdictInconclusive:
		if a := attemptOf(t); a != nil {
			a.mu.Lock()
			a.inconclusive, a.whats = append(a.inconclusive, v), append(a.whats, what)
			a.mu.Unlock()
			t.Logf("%s (attempt %d): %v", what, a.n, v.Err())
			return
		}
		t.Errorf("%s: %v", what, v.Err())
	}
}

// retryInconclusive runs body, and runs it again while the verdicts it
// judged were inconclusive and nothing else failed, up to
// InconclusiveRetries more times. Each retry is logged with the measured
// stall that explained it (and appended to $BLOBLEADER_RETRY_LOG); a
// scenario still inconclusive after the last fails.
func retryInconclusive(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	for n := 1; ; n++ {
		a := &attempt{n: n}
		attempts.Store(t, a)
		func() {
			defer attempts.Delete(t)
			defer a.stop()
			defer func() {
				if r := recover(); r != nil && r != errStarved {
					panic(r)
				}
			}()
			body(t)
		}()
		if t.Failed() || len(a.inconclusive) == 0 {
			return
		}
		v := checker.Compose(a.inconclusive...)
		why := firstLine(v.Err())
		if n > InconclusiveRetries {
			line := fmt.Sprintf("%s: inconclusive %d times in a row, the last with a measured stall of %v: %s; FAIL", t.Name(), n, v.MaxStall().Round(time.Millisecond), why)
			appendRetryLog(t, line)
			t.Errorf("%s (an unjudged scenario has not passed; %d runs, %s)", line, n, strings.Join(a.whats, ", "))
			return
		}
		line := fmt.Sprintf("%s: attempt %d of %d inconclusive, measured stall %v: %s; retrying on a fresh cluster",
			t.Name(), n, 1+InconclusiveRetries, v.MaxStall().Round(time.Millisecond), why)
		appendRetryLog(t, line)
		t.Log(line)
	}
}

// stop ends what the attempt started, last first.
func (a *attempt) stop() {
	a.mu.Lock()
	stops := a.stops
	a.stops = nil
	a.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// firstLine is the verdict's reason in one line: its first entry.
func firstLine(err error) string {
	if err == nil {
		return ""
	}
	lines := strings.Split(err.Error(), "\n")
	for _, l := range lines[1:] {
		if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- ")); l != "" {
			if i := strings.Index(l, "; evidence:"); i > 0 {
				l = l[:i]
			}
			return l
		}
	}
	return lines[0]
}

// appendRetryLog appends line to $BLOBLEADER_RETRY_LOG, if set.
func appendRetryLog(t *testing.T, line string) { stalltest.LogRetry(t, line) }

// schedOf is the cluster's CPU probe record for the checker (nil for a
// backend without one).
func schedOf(c cluster.Cluster) *checker.Sched {
	sp, ok := c.(interface{ SchedProbe() *stalltest.Probe })
	if !ok || sp.SchedProbe() == nil {
		return nil
	}
	s := checkerSched(sp.SchedProbe().Record())
	if st, ok := c.(interface{ StorageProbe() *cluster.StorageProbe }); ok && st.StorageProbe() != nil {
		s.Storage = st.StorageProbe().Slow()
	}
	return s
}

// checkerSched is a probe's record in the checker's terms.
func checkerSched(r stalltest.Record) *checker.Sched {
	return &checker.Sched{Tick: r.Tick, Floor: r.Floor, Wakes: int(r.Wakes), Late: r.Late}
}

// stalls tracks the largest stall any judged run of this test binary
// measured, for the one line the retry log ends with (machineSummary).
var stalls struct {
	sync.Mutex
	runs      int
	longest   time.Duration
	longestIn string
	total     time.Duration
	totalIn   string
}

// noteStall records a judged run's CPU probe record.
func noteStall(t *testing.T, s *checker.Sched) {
	if s == nil {
		return
	}
	stalls.Lock()
	defer stalls.Unlock()
	stalls.runs++
	if m := s.Max().Late(); m > stalls.longest {
		stalls.longest, stalls.longestIn = m, t.Name()
	}
	if tot := s.Total(); tot > stalls.total {
		stalls.total, stalls.totalIn = tot, t.Name()
	}
}

// MachineSummary appends to $BLOBLEADER_RETRY_LOG one line on the stalls
// the judged runs of this test binary measured; TestMain calls it.
func MachineSummary() {
	path := os.Getenv(EnvRetryLog)
	stalls.Lock()
	defer stalls.Unlock()
	if path == "" || stalls.runs == 0 {
		return
	}
	line := fmt.Sprintf("cpu probe: %d judged runs; the longest stall %v (%s); the most stall in one run %v (%s)",
		stalls.runs, stalls.longest.Round(time.Millisecond), stalls.longestIn, stalls.total.Round(time.Millisecond), stalls.totalIn)
	stalltest.LogRetry(nopTB{}, line)
}

// nopTB is the testing.TB of MachineSummary, which runs after the tests:
// LogRetry reports a failed write through it, and there is nobody to tell.
type nopTB struct{ testing.TB }

func (nopTB) Logf(string, ...any) {}

// InvScenario names the timing bounds a scenario asserts itself, outside
// the checker (e.g. a command's group gone 1 s after its supervisor's
// SIGKILL), in a stall-explained miss.
const InvScenario = "scenario"

// stallOf is the environment's stall in [from, to] by c's probes (the CPU
// probe's late wakes and storage's slow answers, as the checker counts
// them), without copying their whole records; zero without probes.
func stallOf(c cluster.Cluster, from, to time.Time) time.Duration {
	if s, ok := c.(interface {
		StallIn(from, to time.Time) time.Duration
	}); ok {
		return s.StallIn(from, to)
	}
	return 0
}

// waiting is a scenario's wait for something to happen: the waits only
// keep a broken run from hanging (the checker judges the bounds), so each
// lasts its timeout plus the environment's stall since it began (stallOf),
// at most stalltest.MaxStretch × its timeout in all: on a busy machine a
// wait runs out only when the system, not the machine, was slow, and on a
// starved one it still runs out, inconclusive (fatal).
type waiting struct {
	c       cluster.Cluster
	start   time.Time
	timeout time.Duration
}

func waitOn(c cluster.Cluster, timeout time.Duration) waiting {
	return waiting{c: c, start: time.Now(), timeout: timeout}
}

// over reports whether the wait has run out.
func (w waiting) over() bool {
	now := time.Now()
	return now.Sub(w.start) > w.timeout+min(stallOf(w.c, w.start, now), w.stretch())
}

// stretch is the most a stall lengthens the wait: (MaxStretch − 1) × its
// timeout.
func (w waiting) stretch() time.Duration { return (stalltest.MaxStretch - 1) * w.timeout }

// starvedOut reports whether a wait that ran out was starved: the machine
// stalled for its whole stretch.
func (w waiting) starvedOut() bool { return stallOf(w.c, w.start, time.Now()) >= w.stretch() }

// fatal ends t's attempt for a wait that ran out, saying what it waited
// for: inconclusive (starved) when the machine stalled for the wait's
// whole stretch, so only a stall could have kept it from its end; a
// failure otherwise.
func (w waiting) fatal(t *testing.T, format string, args ...any) {
	t.Helper()
	starved(t, w.c, fmt.Sprintf(format, args...), w.start, time.Now(), w.stretch())
}

// waitLeader is c.WaitLeader judged as a scenario's wait: when it ran out
// after the machine stalled for its whole stretch (the cluster caps the
// wait there, as waitOn does), only a stall could have kept the leader
// away, and the attempt ends inconclusive (fatal); otherwise t fails.
func waitLeader(t *testing.T, c cluster.Cluster, timeout time.Duration, except ...string) cluster.Worker {
	t.Helper()
	w := waitOn(c, timeout)
	l, err := c.FindLeader(timeout, except...)
	if err != nil {
		if w.starvedOut() {
			w.fatal(t, "%v", err)
		}
		t.Fatalf("%v", err)
	}
	return l
}

// String says how long it waited, for a wait that ran out.
func (w waiting) String() string {
	now := time.Now()
	return fmt.Sprintf("%v (plus the %v the machine stalled meanwhile)", w.timeout, stallOf(w.c, w.start, now).Round(time.Millisecond))
}

// timingBound judges a timing bound a scenario asserts itself, as the
// checker judges its own (checker.Sched): what came at got, due by due,
// counting from from. In time, it reports true. Beyond due + the stall c's
// CPU probe measured in [from, got] it fails t; within that stall it is
// judged inconclusive (retried under retryInconclusive), naming the stall.
func timingBound(t *testing.T, c cluster.Cluster, what string, from, due, got time.Time) bool {
	t.Helper()
	if !got.After(due) {
		return true
	}
	miss, stall := got.Sub(due), stallOf(c, from, got)
	if miss > stall {
		t.Errorf("%s: %v late, beyond the %v the machine stalled in that window (CPU probe)", what, miss.Round(time.Millisecond), stall.Round(time.Millisecond))
		return false
	}
	judged(t, what, checker.Verdict{Stalled: []checker.Violation{{Invariant: InvScenario, At: due, Miss: miss, Stall: stall,
		Message: fmt.Sprintf("%s: %v late, within the %v the machine stalled in that window (CPU probe): inconclusive", what, miss.Round(time.Millisecond), stall.Round(time.Millisecond))}}})
	return false
}

// errStarved ends an attempt that starved stops (recovered by
// retryInconclusive).
var errStarved = errors.New("scenarios: the attempt ended inconclusive")

// starved is a scenario's check that failed in a way only an environment
// stall of at least need in [from, to] could cause (a renew pushed past its
// timeout, a heartbeat read too late): when c's probes measured that much,
// the attempt ends inconclusive at once (retried); otherwise t fails.
func starved(t *testing.T, c cluster.Cluster, what string, from, to time.Time, need time.Duration) {
	t.Helper()
	stall := stallOf(c, from, to)
	if stall < need || attemptOf(t) == nil {
		t.Fatalf("%s (the machine stalled %v in that window; %v could have explained it)", what, stall.Round(time.Millisecond), need)
	}
	judged(t, what, checker.Verdict{Stalled: []checker.Violation{{Invariant: InvScenario, At: to, Stall: stall,
		Message: fmt.Sprintf("%s, within the %v the machine stalled in that window (CPU and storage probes; %v could explain it): inconclusive", what, stall.Round(time.Millisecond), need)}}})
	panic(errStarved)
}

// awaitGone waits until none of pids runs. They must be gone by bound
// after from; a wait past that lasts as long as c's CPU probe says the
// machine stalled since from, and fails t beyond it (timingBound judges
// a death in between: inconclusive).
func awaitGone(t *testing.T, c cluster.Cluster, what string, from time.Time, bound time.Duration, pids ...int) {
	t.Helper()
	due := from.Add(bound)
	for _, pid := range pids {
		for chaos.ProcAlive(pid) {
			now := time.Now()
			if stall := stallOf(c, from, now); now.After(due.Add(stall)) {
				t.Fatalf("%s: pid %d still runs %v after (allowed %v, plus the %v the machine stalled meanwhile)",
					what, pid, now.Sub(from).Round(time.Millisecond), bound, stall.Round(time.Millisecond))
			}
			hold(t, 5*time.Millisecond)
		}
	}
	timingBound(t, c, what, from, due, time.Now())
}
