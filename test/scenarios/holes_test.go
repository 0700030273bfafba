package scenarios

import "testing"

// Issue 10's scenarios (holes.go) on the local backend, in parallel with the
// others.

func TestElection_LateReleaseFromEndedLeadership(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LateReleaseFromEndedLeadership)
}

func TestElection_LockBlobDeleted(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LockBlobDeleted)
}

func TestElection_LockContainerDeleted(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LockContainerDeleted)
}

func TestElection_LostAnswersOnAcquireAndTermWrite(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LostAnswersOnAcquireAndTermWrite)
}

func TestElection_OperatorWritesBadMetadata(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, OperatorWritesBadMetadata)
}

func TestElection_StorageRolledBack(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, StorageRolledBack)
}

func TestElection_LedgerSegmentReplaced(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LedgerSegmentReplaced)
}

func TestElection_LedgerPoisonedLeadersStepDown(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LedgerPoisoned)
}
