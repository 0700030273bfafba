package bench

import (
	"strings"
	"testing"
)

// The frozen-supervisor rows: freeze → dead, dead → next start and the
// overlap, with the run count; no trials, no rows.
func TestRenderRunFreeze_RowsFromTheTrials(t *testing.T) {
	if got := renderSection(t, "runfreeze.md.tmpl", Results{}); got != "" {
		t.Fatalf("no trials rendered %q, want nothing", got)
	}
	out := renderSection(t, "runfreeze.md.tmpl", Results{RunFreeze: []FreezeTrial{
		{FreezeDead: 10.5, DeadNext: 4.2},
		{FreezeDead: 9.5, DeadNext: 4.4},
		{FreezeDead: 9.9, DeadNext: -0.3, OverlapS: 0.3},
	}})
	for _, want := range []string{"### Supervisor frozen alone", "| supervisor frozen → its command dead | 9.900 |", "| overlap (two commands at once) | 0.000 |", "Frozen-supervisor runs: 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered rows lack %q:\n%s", want, out)
		}
	}
}
