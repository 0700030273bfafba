package scenarios

import "testing"

func TestElection_StorageRefusesTheLeader(t *testing.T) {
	t.Parallel()
	RunScenario(t, Local, StorageRefusesTheLeader)
}
