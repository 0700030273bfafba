//go:build azure

package azure

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/report"
)

func TestOffline_CostEstimate(t *testing.T) {
	in := DefaultCostInputs(3)
	in.GroupsRunning, in.Deployed = 66*time.Minute, 75*time.Minute
	c := EstimateCost(in)
	// 3 groups × 3960 s × (1.0 vCPU × 0.0000125 + 1.0 GB × 0.0000014) ≈ $0.17
	// (worker 0.8/0.7, sidecar 0.2 vCPU/0.3 GB: ACI's minimum of 1 and 1 per
	// group); Premium registry, one started day ≈ $1.67; storage and logs
	// bounds $0.15: total $1.98 (summed before rounding).
	if c.ACI != 0.17 || c.Registry != 1.67 || c.Total != 1.98 || !strings.Contains(c.Basis, "estimate") {
		t.Fatalf("cost %+v, want ACI 0.17, registry 1.67, total 1.98, marked as an estimate", c)
	}
	in.Deployed, in.RegistrySKU = 30*time.Hour, "Basic"
	if c := EstimateCost(in); c.Registry != 0.33 {
		t.Fatalf("Basic registry for 30 h: %v, want two started days (0.33)", c.Registry)
	}
}

// make test-azure leaves evidence in the local suite's form plus the run's
// own summary: verdicts, failover times, ARM operation durations, cost.
func TestOffline_RunReportHasVerdictsTimesOperationsAndCost(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	run := checker.Run{Start: t0, End: at(120),
		Events: []checker.Event{
			{T: at(1), Identity: "ci-w-01", Event: checker.EventStartedLeading, Term: 1, ValidUntil: at(11)},
			{T: at(15), Identity: "ci-w-01", Event: checker.EventRenewed, Term: 1, ValidUntil: at(25)},
			{T: at(40), Identity: "ci-w-02", Event: checker.EventStartedLeading, Term: 2, ValidUntil: at(50)},
		},
		Faults: []checker.Fault{{Kind: checker.FaultCrash, Target: "ci-w-01", Start: at(20), End: at(90)}},
	}
	res, err := checker.Check(run, checker.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	ops := []chaos.ARMOp{
		{Op: "stop", Target: "ci-w-01", Start: at(20), Took: 23400 * time.Millisecond},
		{Op: "start", Target: "ci-w-01", Start: at(60), Took: 131 * time.Second},
	}
	dir := t.TempDir()
	extra := ScenarioExtra(ops, DefaultCostInputs(3), 2*time.Minute)
	files, err := WriteScenarioReport(dir, "Azure_LeaderKilled", run, res, extra)
	if err != nil {
		t.Fatal(err)
	}
	var sum report.Summary
	b, _ := os.ReadFile(files.JSON)
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Extra["arm_stop_max_s"] != 23.4 || sum.Extra["arm_start_max_s"] != 131 || sum.Extra["arm_start_count"] != 1 || sum.Extra["aci_cost_usd_estimate"] <= 0 {
		t.Fatalf("summary extra %v, want the ARM durations and the cost share", sum.Extra)
	}
	if len(sum.Failovers) != 1 || sum.FailoversByKind["crash"].Count != 1 {
		t.Fatalf("summary failovers %+v, want the crash failover", sum.Failovers)
	}
	for _, f := range []string{files.SVG, files.HTML} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}

	rr := RunReport{Started: t0, Ended: at(4500), Location: "swedencentral", Postfix: "abc123", Workers: 3, Credential: string(CredGitHubOIDC),
		ClockSkew: 250 * time.Millisecond, Stages: map[string]time.Duration{"terraform apply (stage 1)": 4 * time.Minute},
		Scenarios: []ScenarioReport{
			{Name: "LeaderKilled", Verdict: VerdictPass, Failovers: sum.Failovers, ARMOps: ops, Files: files},
			{Name: "PausedLeaderStepsDown", Verdict: VerdictSkip, Reason: chaos.ACIPauseReason},
			{Name: "StorageOutage", Verdict: VerdictFail, Reason: "L1 | exceeded", Violations: 1},
		},
		Cost: EstimateCost(DefaultCostInputs(3)),
	}
	jp, mp, err := WriteRunReport(dir, rr)
	if err != nil {
		t.Fatal(err)
	}
	var back RunReport
	b, _ = os.ReadFile(jp)
	if err := json.Unmarshal(b, &back); err != nil || len(back.Scenarios) != 3 || back.Scenarios[0].ARMOps[1].Took != 131*time.Second {
		t.Fatalf("azure-run.json does not round-trip: %v %+v", err, back)
	}
	md, _ := os.ReadFile(mp)
	for _, want := range []string{"1 passed, 1 failed, 1 skipped", "| LeaderKilled | pass | crash on ci-w-01:", "stop ci-w-01 23.4 s; start ci-w-01 131.0 s",
		"| StorageOutage | fail: L1 \\| exceeded |", "terraform apply (stage 1) | 4m0s", "Cost estimate"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("azure-run.md lacks %q:\n%s", want, md)
		}
	}
}
