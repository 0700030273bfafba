package scenarios

import "testing"

func TestElection_LedgerSegmentReplaced(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LedgerSegmentReplaced)
}

func TestElection_LedgerPoisonedIsRepairedOrLoud(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LedgerPoisoned)
}
