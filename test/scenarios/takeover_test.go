package scenarios

import (
	"os"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// Early takeover (docs/failover.md#early-takeover) on the fast profile: each
// once in `make test`, in parallel like the others.

func TestTakeover_HostLossFast(t *testing.T) {
	t.Parallel()
	RunScenario(t, Fast, HostLossFast)
}

func TestTakeover_FrozenLeaderPastT(t *testing.T) {
	t.Parallel()
	RunScenario(t, Fast, FrozenLeaderPastT)
}

func TestTakeover_SlowStorageAndPausedFollowerNoFalseTakeover(t *testing.T) {
	t.Parallel()
	RunScenario(t, Fast, SlowStorageAndPausedFollower)
}

func TestTakeover_OperatorBreakStillFreesAtOnce(t *testing.T) {
	t.Parallel()
	RunScenario(t, Fast, OperatorBreakFast)
}

func TestTakeover_LateBreakLeavesTheNextLeaderAlone(t *testing.T) {
	t.Parallel()
	RunScenario(t, Fast, LateBreakFast)
}

// The negative control of early takeover: followers built with
// -tags negativecontrol and run with --unsafe-early-break break a leader's
// lease once its record has been unchanged for a third of its heartbeat
// gap (0.5 s) instead of its published horizon + 0.25 s (2.25 s). Freezing
// the leader then hands the lease over while it still believes it leads.
// The checker must fail the run (S1, or the takeover rule: a new leader
// before the broken one had stopped); a checker that passes it proves
// nothing.
func TestTakeover_EarlyBreakNegativeControlFails(t *testing.T) {
	t.Parallel()
	c := Fast(t, 3, cluster.UnsafeEarlyBreak())
	p := c.Params()
	pause := &chaos.Pause{}
	old, _ := hitLeader(t, c, pause)
	waitLeader(t, c, fastTakeover(p), old.Identity())
	remove(t, c, pause)
	_, res := Judge(t, c, reportName(t))
	caught := 0
	for _, v := range res.Violations {
		if v.Invariant == checker.InvS1 || v.Invariant == checker.InvTakeover {
			caught++
		}
	}
	if caught == 0 || res.Outcome() != checker.VerdictFail {
		t.Fatalf("the checker did not fail a run whose followers break leases before the holder stopped: verdict %s, violations %v", res.Outcome(), res.Violations)
	}
	t.Logf("caught as expected: %d S1/takeover violation(s), e.g. %s", caught, res.Violations[0].Message)
}

func TestTakeover_SupervisorHostLossFast(t *testing.T) {
	t.Parallel()
	repeatRuns(t, func(t *testing.T) {
		rc := NewFastRunCluster(t)
		rc.Judge(reportName(t), supervisorHostLossFast(t, rc)...)
	})
}

// Under `run --profile fast` the kill grace comes before the end of
// leadership (docs/failover.md#commands-under-blobleader-run): a
// partitioned supervisor SIGKILLs its command (which ignores SIGTERM) at
// its deadline, and a supervisor frozen alone has its guard do it, both
// before a follower's early takeover starts the next command.
func TestTakeover_PartitionedSupervisorFastStopsItsCommandBeforeTheBreak(t *testing.T) {
	t.Parallel()
	repeatRuns(t, func(t *testing.T) {
		rc := NewFastRunCluster(t)
		rc.Judge(reportName(t), supervisorPartitioned(t, rc)...)
	})
}

func TestTakeover_SupervisorFrozenAloneFastItsGuardKillsBeforeTheBreak(t *testing.T) {
	t.Parallel()
	repeatRuns(t, func(t *testing.T) {
		rc := NewFastRunCluster(t)
		rc.Judge(reportName(t), supervisorFrozenAlone(t, rc)...)
	})
}

// The seeded soak on the fast profile, under `make chaos` (as long as
// $BLOBLEADER_CHAOS_DURATION): the election soak's mix with early
// takeover's faults in it (late_break: the leader's host lost while every
// follower's first break is held past the break period). In `make test` the
// late break runs once, as TestTakeover_LateBreakLeavesTheNextLeaderAlone.
func TestTakeover_SeededSoak(t *testing.T) {
	if os.Getenv(EnvDuration) == "" {
		t.Skip("the early-takeover soak runs under make chaos: set " + EnvDuration)
	}
	t.Parallel()
	cfg := SoakFromEnv(t, 60*time.Second)
	retryInconclusive(t, func(t *testing.T) {
		c := Fast(t, 3)
		_, res := Soak(t, c, cfg, reportName(t))
		judged(t, "verdict", res.Verdict)
	})
}
