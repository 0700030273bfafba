package scenarios

import "testing"

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

func TestTakeover_SupervisorHostLossFast(t *testing.T) {
	t.Parallel()
	repeatRuns(t, func(t *testing.T) {
		rc := NewFastRunCluster(t)
		rc.Judge(reportName(t), supervisorHostLossFast(t, rc)...)
	})
}
