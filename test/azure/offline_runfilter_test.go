//go:build azure

package azure

import (
	"testing"

	"github.com/blobleader/blobleader/test/scenarios"
)

// TestOffline_ShardStageHonoursRun: a run filtered to one election scenario
// (`-run TestAzure_Election/StorageOutage`) must not pay for the shard
// stage's apply; a filter naming a shard scenario, or none, runs it.
func TestOffline_ShardStageHonoursRun(t *testing.T) {
	all := []ShardScenario{{ShardScenario: scenarios.ShardsFollowerKilled}}
	name := "Shards_" + all[0].Name
	for _, tc := range []struct {
		pattern string
		groups  int
		want    int
	}{
		{"", 3, 1},
		{"TestAzure_Election", 3, 1},
		{"^TestAzure_Election$", 3, 1},
		{"TestAzure_Election/" + name, 3, 1},
		{"TestAzure_Election/Shards_", 3, 1},
		{"TestAzure_Election/StorageOutage", 3, 0},
		{"TestAzure_Election/^LeaderKilled$", 3, 0},
		{"TestOffline", 3, 0},
		{"TestAzure_Election/" + name + "/nothing", 3, 1}, // deeper levels are the scenario's own subtests
		{"", 1, 0}, // too few groups
	} {
		if got := len(ShardStageRuns(all, tc.groups, tc.pattern)); got != tc.want {
			t.Errorf("-run %q with %d groups: the shard stage runs %d scenarios, want %d", tc.pattern, tc.groups, got, tc.want)
		}
	}
}
