package bench

import (
	"strings"
	"testing"
)

// The blocked-output rows split the trials by output state and say how many
// each side had; no results, no section.
func TestRenderBlockedOutput_SplitsBlockedFromFlowing(t *testing.T) {
	if got := renderSection(t, "blockedoutput.md.tmpl", Results{}); got != "" {
		t.Fatalf("no results rendered %q, want nothing", got)
	}
	r := Results{BlockedOutput: []BlockedOutputResult{{Job: "j", Violations: map[string]int{}, Trials: []BlockedOutputTrial{
		{Blocked: true, RenewRecovery: 2, StepDownLate: 0.004, ReapedAfter: 0.004, Overlap: 0, Gap: 5.2},
		{Blocked: false, RenewRecovery: 2.1, StepDownLate: 0.020, ReapedAfter: 0.020, Overlap: 0, Gap: 5.5},
		{Blocked: true, RenewRecovery: 2, StepDownLate: 0.006, ReapedAfter: 0.006, Overlap: 0, Gap: 5.3},
	}}}}
	out := renderSection(t, "blockedoutput.md.tmpl", r)
	for _, want := range []string{
		"2 leaderships with the output blocked, 1 without",
		"| step-down − deadline | blocked | 0.004 |",
		"| step-down − deadline | flowing | 0.020 |",
		"| command overlap | blocked | 0.000 |",
		"j: checker verdicts (Check and CheckCommands): no violations",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered section lacks %q:\n%s", want, out)
		}
	}
}
