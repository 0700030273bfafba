package scenarios

import "testing"

// Run mode (issue 12): each scenario once in `make test`, REPEAT times under
// `make chaos`; two at a time like the worker-mode scenarios.

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

func TestRun_SupervisorAlonePausedLedgerFencesTheOrphan(t *testing.T) {
	t.Parallel()
	RunCommandScenario(t, SupervisorAlonePaused)
}
