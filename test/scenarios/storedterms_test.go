package scenarios

import "testing"

func TestShards_StoredTermsPlanted(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsStoredTermsPlanted)
}
