package scenarios

import "testing"

func TestElection_LateReleaseFreesOnlyItsOwnLeadership(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LateReleaseFromEndedLeadership)
}

func TestElection_LostAnswersCostAPollNotALease(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LostAnswersOnAcquireAndTermWrite)
}

func TestElection_StorageRefusesTheLeader(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, StorageRefusesTheLeader)
}
