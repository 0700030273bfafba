package scenarios

import "testing"

func TestElection_LockBlobDeletedHolderStepsDownAndTermsGrow(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LockBlobDeleted)
}

func TestElection_LockContainerDeletedHolderStepsDownAndTermsGrow(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, LockContainerDeleted)
}

func TestElection_BadTermMetadataIsReportedNeverLedOn(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, OperatorWritesBadMetadata)
}
