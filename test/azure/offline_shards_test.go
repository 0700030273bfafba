//go:build azure

package azure

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/test/scenarios"
)

// The shard stage runs shard scenarios that the local suite runs too, the
// follower-killed one among them, and the doc names each.
func TestOffline_ShardScenariosAreLocalOnes(t *testing.T) {
	local := registeredLocal(t, "ShardScenario", "RunShardScenario")
	if len(local) < 6 {
		t.Fatalf("found only %d local shard scenarios (%v); the parser is missing some", len(local), local)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "testing-on-azure.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range ShardScenarios() {
		names = append(names, s.Name)
		if !slices.Contains(local, s.Name) {
			t.Errorf("the Azure shard stage runs %s, which the local suite does not register (%v)", s.Name, local)
		}
		if !strings.Contains(string(doc), s.Name) {
			t.Errorf("docs/testing-on-azure.md does not name the shard scenario %s", s.Name)
		}
		if s.Skip != "" && !strings.Contains(string(doc), s.Skip) {
			t.Errorf("docs/testing-on-azure.md does not document the skip of %s with its reason %q", s.Name, s.Skip)
		}
	}
	if !slices.Contains(names, scenarios.ShardsFollowerKilled.Name) {
		t.Errorf("the Azure shard stage runs %v; the shard stage must run at least %s", names, scenarios.ShardsFollowerKilled.Name)
	}
}

// The shard stage judges only the incarnations the shards apply started:
// a group keeps its name, so its election-mode blobs are told apart by the
// process start in their names.
func TestOffline_IncarnationsSinceKeepsOnlyLaterStarts(t *testing.T) {
	since := time.Unix(1_800_000_000, 0)
	blob := func(id string, start time.Time, seg int) string {
		return filepath.Join("/h", id, fmt.Sprintf("%d-%04d.jsonl", start.UnixNano(), seg))
	}
	before := blob("bl1-w1", since.Add(-time.Nanosecond), 0)
	at := blob("bl1-w1", since, 0)
	after := blob("bl1-w2", since.Add(time.Minute), 3)
	odd := filepath.Join("/h", "bl1-w3", "history.jsonl")
	got := IncarnationsSince([]string{before, at, after, odd}, since)
	if want := []string{at, after, odd}; !slices.Equal(got, want) {
		t.Fatalf("IncarnationsSince = %v, want %v", got, want)
	}
}
