package scenarios

import "testing"

func TestElection_RollbackNeverStartsATermTwice(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, StorageRolledBack)
}
