package bench

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The README's storage cost of the default profile is the figure the cost
// chart (docs/bench/cost.svg) is drawn from: docs/bench/results.json, the
// committed `make bench` results. One source, so the two cannot disagree.
func TestReadme_DefaultProfileCostIsTheBenchResults(t *testing.T) {
	b, err := os.ReadFile("../../docs/bench/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	c, ok := r.CostOf("ours")
	if !ok {
		t.Fatal("docs/bench/results.json has no cost of ours")
	}
	leader, lok := c.Leader()
	follower, fok := c.Follower()
	if !lok || !fok {
		t.Fatalf("docs/bench/results.json lacks a leader or a follower: %+v", c)
	}
	want := f0(leader.Election) + " / " + f0(follower.Election)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| default |") {
			cells := strings.Split(strings.Trim(line, "| "), "|")
			if got := strings.TrimSpace(cells[len(cells)-1]); got != want {
				t.Fatalf("README's default profile: storage ops %q, the bench results (the cost chart's source) %q", got, want)
			}
			return
		}
	}
	t.Fatal("README has no \"| default |\" row in its timing profiles")
}
