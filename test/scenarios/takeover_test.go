package scenarios

import (
	"os"
	"testing"
	"time"
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

func TestTakeover_SupervisorHostLossFast(t *testing.T) {
	t.Parallel()
	repeatRuns(t, func(t *testing.T) {
		rc := NewFastRunCluster(t)
		rc.Judge(reportName(t), supervisorHostLossFast(t, rc)...)
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
