package scenarios

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

func TestMain(m *testing.M) {
	if os.Getenv(stamperEnv) != "" {
		stamp()
	}
	code := cluster.Main(m)
	MachineSummary()
	os.Exit(code)
}

// Each scenario runs on the local backend in parallel (t.Parallel): four at
// a time under `make test` (GO_TEST_PARALLEL), GOMAXPROCS at a time under
// `make chaos`.

func TestElection_LeaderKilled(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LeaderKilled)
}

func TestElection_LeaderStoppedGracefully(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LeaderStoppedGracefully)
}

func TestElection_PausedLeaderStepsDown(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, PausedLeaderStepsDown)
}

func TestElection_PartitionedLeaderStepsDown(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, PartitionedLeaderStepsDown)
}

func TestElection_LatencyBelowRequestTimeoutKeepsLeader(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LatencyBelowRequestTimeout)
}

func TestElection_LatencyAboveRequestTimeoutDeposesLeader(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LatencyAboveRequestTimeout)
}

func TestElection_RandomResetsOnAllWorkers(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, RandomResetsOnAllWorkers)
}

func TestElection_StorageOutageForEveryone(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, StorageOutage)
}

func TestElection_OperatorBreaksLease(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, OperatorBreaksLease)
}

func TestElection_RollingRestart(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, RollingRestart)
}

// The seeded soak: 60 s in the short suite (skipped with -short), as long as
// $BLOBLEADER_CHAOS_DURATION under `make chaos`.
func TestElection_SeededSoak(t *testing.T) {
	if testing.Short() && os.Getenv(EnvDuration) == "" {
		t.Skip("soak skipped with -short; set " + EnvDuration)
	}
	t.Parallel()
	cfg := SoakFromEnv(t, 60*time.Second)
	retryInconclusive(t, func(t *testing.T) {
		c := Local(t, 3, cluster.BlockableOutput()) // the mix blocks their output too
		_, res := Soak(t, c, cfg, reportName(t), append(operatorActions(), ledgerActions()...)...)
		judged(t, "verdict", res.Verdict)
	})
}

// The negative control: a worker run with --unsafe-no-step-down keeps
// claiming leadership after a pause or a partition. The checker must report
// S1 for it; a checker that never fails proves nothing.
func TestChecker_ReportsS1ForUnsafeLeader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func() chaos.Fault
	}{
		{"paused", func() chaos.Fault { return &chaos.Pause{} }},
		{"partitioned", func() chaos.Fault { return &chaos.Partition{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The stall watchdog would step a resumed leader down (its task
			// made no progress while frozen): switch it off, so the control
			// shows the missing step-down and nothing else.
			c := Local(t, 1, cluster.Unsafe(), cluster.Args("--watchdog-timeout", "0"))
			p := c.Params()
			unsafe := waitLeader(t, c, takeover(p))
			if _, err := c.Start(ctxFor(t, time.Minute), 2); err != nil {
				t.Fatal(err)
			}
			f := tc.fault()
			inject(t, c, f, unsafe)
			other := waitOtherLeader(t, c, unsafe.Identity(), takeover(p))
			remove(t, c, f)
			// Resumed or reconnected, the unsafe worker still says it leads:
			// two leaders, visible even at the HTTP level.
			st, err := unsafe.Status(observe(t))
			if err != nil {
				t.Fatal(err)
			}
			if st.Role != "leader" {
				t.Fatalf("the unsafe worker %s does not claim leadership after the %s fault (%+v); the control shows nothing", unsafe.Identity(), tc.name, st)
			}
			_, res := Judge(t, c, reportName(t))
			var s1 []checker.Violation
			for _, v := range res.Violations {
				if v.Invariant == checker.InvS1 {
					s1 = append(s1, v)
				}
			}
			if len(s1) == 0 {
				t.Fatalf("the checker did not report S1 although %s (unsafe) and %s both led; violations: %v", unsafe.Identity(), other.Identity(), res.Violations)
			}
			if !strings.Contains(s1[0].Message, unsafe.Identity()) {
				t.Errorf("the S1 violation does not name the unsafe worker %s: %s", unsafe.Identity(), s1[0].Message)
			}
			if res.Outcome() != checker.VerdictFail || res.Err() == nil {
				t.Errorf("the negative control's run has verdict %s; it must fail", res.Outcome())
			}
			t.Logf("caught as expected: %s", s1[0].Message)
		})
	}
}

// waitOtherLeader waits until a worker other than except reports that it
// leads (except may still claim leadership too: that is the point).
func waitOtherLeader(t *testing.T, c cluster.Cluster, except string, timeout time.Duration) cluster.Worker {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, w := range c.Workers() {
			if w.Identity() == except || !w.Running() {
				continue
			}
			if st, err := w.Status(ctxFor(t, time.Second)); err == nil && st.Role == "leader" {
				return w
			}
		}
		hold(t, 100*time.Millisecond)
	}
	t.Fatalf("no worker other than %s took over within %v", except, timeout)
	return nil
}

// Blocked output: stdout/stderr a full pipe, one failed renew, then cut off
// (docs/architecture.md#logs).
func TestElection_BlockedOutputLeaderRenewsAndStepsDown(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, BlockedOutputLeaderStepsDown)
}
