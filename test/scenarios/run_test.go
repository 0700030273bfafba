package scenarios

import (
	"os"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
)

// Run mode: each scenario once in `make test`, REPEAT times under
// `make chaos`; in parallel like the worker-mode scenarios.

func TestRun_CommandKilledHandsOverFast(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, CommandKilled)
}

func TestRun_CommandExitsOnItsOwnHandsOverFast(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, CommandExitsOnItsOwn)
}

func TestRun_CommandIgnoringTermAndItsGrandchildDieBeforeTheNext(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, CommandIgnoresTerm)
}

func TestRun_SupervisorKilledTakesItsCommand(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, SupervisorKilled)
}

func TestRun_PartitionedSupervisorStopsItsCommandByTheDeadline(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, SupervisorPartitioned)
}

func TestRun_SupervisorAndCommandFrozenTogether(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, SupervisorAndCommandFrozen)
}

// The seeded soak in run mode: supervisors of ledgercmd under the soak's
// random fault mix, judged by Check and CheckCommands. Only under `make
// chaos` ($BLOBLEADER_CHAOS_DURATION), so `make test` does not grow by
// another minute. On top of the worker mix it freezes supervisors alone,
// sends them job-control stops and makes the running command start
// escaping jobs (runModeActions): none of those may double a command. An
// operator's break is the one named exception (S2 is never excused).
func TestRun_SeededSoak(t *testing.T) {
	if os.Getenv(EnvDuration) == "" {
		t.Skip("the run-mode soak runs under make chaos: set " + EnvDuration)
	}
	t.Parallel()
	cfg := SoakFromEnv(t, 60*time.Second)
	retryInconclusive(t, func(t *testing.T) {
		rc := NewRunCluster(t)
		rc.opts = []cluster.Option{cluster.BlockableOutput()} // the mix blocks their output too
		rc.Supervise(3)
		_, res := Soak(t, rc.Local, cfg, reportName(t), rc.runModeActions()...)
		judged(t, "supervisors", res.Verdict)
		rc.Judge(reportName(t)+"-commands", checker.ExceptOperatorBreak)
	})
}

func TestRun_SupervisorFrozenAloneItsGuardKillsTheCommandInTime(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, SupervisorFrozenAlone)
}

func TestRun_JobControlStopDoesNotStopTheSupervisor(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, JobControlStop)
}

func TestRun_EscapingJobsDieWithTheCommand(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, EscapingDescendants)
}

func TestRun_EscapingJobsDieWithAKilledSupervisor(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, EscapingDescendantsOfTheKilled)
}

func TestRun_SupervisorWithBlockedOutputStopsItsCommandByTheDeadline(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, SupervisorOutputBlocked)
}

func TestRun_OutputReaderGoneSupervisorStopsItsCommandAndHandsOver(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, OutputReaderGoneStop)
}

func TestRun_OutputReaderGoneGuardKillsTheGroupOfAKilledSupervisor(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, OutputReaderGoneKilled)
}

func TestRun_BlockedOutputGuardKillsTheGroupOfAFrozenSupervisor(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, BlockedOutputSupervisorFrozen)
}

func TestRun_BlockedOutputGuardKillsTheGroupOfAKilledSupervisor(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, BlockedOutputSupervisorKilled)
}

func TestRun_OutputOnDevFullGuardKillsTheGroupOfAFrozenSupervisor(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, FullOutputSupervisorFrozen)
}

func TestRun_GuardKilledAndSupervisorFrozenAtOnceTheDeadlineIsStillHeld(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, GuardKilledThenFrozen)
}

func TestRun_Clone3RefusedTheCommandStillStartsInItsGroup(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, Clone3Refused)
}

func TestRun_ForeignOrphanUnderAPid1SupervisorIsNoMember(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, ForeignOrphanUnderPid1)
}

func TestRun_ShimKilledWithANestedCgroupThenKillallStopOverlapNothing(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, ShimKilledNestedThenNameStopped)
}

func TestRun_TreeModeKeepsTheLineageOfAKilledSupervisorAndAKilledShim(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, TreeModeLineage)
}

func TestRun_AStoppedShimNeitherHoldsLeadershipNorTheLease(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, ShimStopped)
}
