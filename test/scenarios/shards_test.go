package scenarios

import "testing"

func TestShards_FollowerKilled(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsFollowerKilled)
}

func TestShards_LeaderKilledMovesOnlyItsShards(t *testing.T) {
	t.Parallel()
	RunShardScenario(t, Local, ShardsLeaderKilled)
}
