//go:build azure

package azure

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blobleader/blobleader/chaos"
	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/report"
)

// A real run leaves evidence someone can commit (docs/testing-on-azure.md,
// "Publishing a run"): per scenario the local suite's report files
// (Azure_<Scenario>.json/.svg/.html, test/report) with the ARM operation
// durations and the cost share in the summary's "extra" figures, and for the
// whole run azure-run.json and azure-run.md: the verdicts, failover times,
// every ARM operation and Terraform stage with its duration, and the cost
// estimate.

// Verdicts of a scenario.
const (
	VerdictPass = "pass"
	VerdictFail = "fail"
	VerdictSkip = "skip"
)

// ScenarioReport is one scenario of a run.
type ScenarioReport struct {
	Name       string               `json:"name"`
	Verdict    string               `json:"verdict"`
	Reason     string               `json:"reason,omitempty"` // why skipped or failed
	Start      time.Time            `json:"start"`
	End        time.Time            `json:"end"`
	Violations int                  `json:"violations"`
	Failovers  []report.FailoverRow `json:"failovers"`
	ARMOps     []chaos.ARMOp        `json:"arm_ops"`
	Files      report.Files         `json:"files"`
}

// RunReport is the evidence of one `make test-azure`.
type RunReport struct {
	Started    time.Time                `json:"started"`
	Ended      time.Time                `json:"ended"`
	Location   string                   `json:"location"`
	Postfix    string                   `json:"postfix"`
	Workers    int                      `json:"workers"`
	Credential string                   `json:"credential"`
	WorkerImg  string                   `json:"worker_image"`
	ClockSkew  time.Duration            `json:"clock_skew_ns"`
	Stages     map[string]time.Duration `json:"stage_durations_ns"` // Terraform applies, image push, destroy
	Scenarios  []ScenarioReport         `json:"scenarios"`
	Cost       Cost                     `json:"cost_estimate"`
}

// ScenarioExtra are a scenario's own figures for the report summary's
// "extra": per ARM operation kind its count and longest duration, and the
// scenario's share of the ACI cost.
func ScenarioExtra(ops []chaos.ARMOp, cost CostInputs, d time.Duration) map[string]float64 {
	extra := map[string]float64{}
	for _, op := range ops {
		extra["arm_"+op.Op+"_count"]++
		if k := "arm_" + op.Op + "_max_s"; op.Took.Seconds() > extra[k] {
			extra[k] = round3(op.Took.Seconds())
		}
		if op.Err != "" {
			extra["arm_"+op.Op+"_errors"]++
		}
	}
	extra["aci_cost_usd_estimate"] = math.Round(aciCost(cost, d)*1e4) / 1e4
	return extra
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// WriteScenarioReport writes the local suite's three report files for one
// scenario, with extra in the summary.
func WriteScenarioReport(dir, name string, run checker.Run, res checker.Result, extra map[string]float64) (report.Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return report.Files{}, err
	}
	f := report.Files{JSON: filepath.Join(dir, name+".json"), SVG: filepath.Join(dir, name+".svg"), HTML: filepath.Join(dir, name+".html")}
	s := report.Summarize(run, res)
	s.Extra = extra
	var js, svg, html bytes.Buffer
	if err := report.WriteJSON(&js, s); err != nil {
		return f, err
	}
	if err := report.WriteSVG(&svg, run, res); err != nil {
		return f, err
	}
	if err := report.WriteHTML(&html, run, res); err != nil {
		return f, err
	}
	for path, b := range map[string][]byte{f.JSON: js.Bytes(), f.SVG: svg.Bytes(), f.HTML: html.Bytes()} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return f, err
		}
	}
	return f, nil
}

// WriteRunReport writes azure-run.json and azure-run.md into dir and returns
// their paths.
func WriteRunReport(dir string, r RunReport) (jsonPath, mdPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", "", err
	}
	jsonPath, mdPath = filepath.Join(dir, "azure-run.json"), filepath.Join(dir, "azure-run.md")
	if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
		return "", "", err
	}
	return jsonPath, mdPath, os.WriteFile(mdPath, []byte(r.Markdown()), 0o644)
}

// Markdown is the run as a page to commit under docs/.
func (r RunReport) Markdown() string {
	var b strings.Builder
	pass, fail, skip := 0, 0, 0
	for _, s := range r.Scenarios {
		switch s.Verdict {
		case VerdictPass:
			pass++
		case VerdictFail:
			fail++
		default:
			skip++
		}
	}
	fmt.Fprintf(&b, "# Azure suite run %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Region `%s`, %d worker groups (postfix `%s`), credentials: %s, clock-skew tolerance %v.  \n", r.Location, r.Workers, r.Postfix, r.Credential, r.ClockSkew)
	fmt.Fprintf(&b, "Worker image `%s`.  \n", r.WorkerImg)
	fmt.Fprintf(&b, "%s to %s (%v). **%d passed, %d failed, %d skipped.**\n\n", r.Started.UTC().Format(time.RFC3339), r.Ended.UTC().Format(time.RFC3339), r.Ended.Sub(r.Started).Round(time.Second), pass, fail, skip)

	b.WriteString("## Scenarios\n\n| scenario | verdict | failovers (kind on target: measured / bound, basis) | ARM operations | violations |\n|---|---|---|---|---|\n")
	for _, s := range r.Scenarios {
		var fos, ops []string
		for _, fo := range s.Failovers {
			v := fmt.Sprintf("%s on %s: %.3f s / %.3f s, %s", fo.Kind, fo.Target, fo.Duration, fo.Bound, fo.Basis)
			if fo.Inconclusive != "" {
				v += " (inconclusive: " + fo.Inconclusive + ")"
			}
			fos = append(fos, v)
		}
		for _, op := range s.ARMOps {
			v := fmt.Sprintf("%s %s %.1f s", op.Op, op.Target, op.Took.Seconds())
			if op.Err != "" {
				v += " (failed)"
			}
			ops = append(ops, v)
		}
		verdict := s.Verdict
		if s.Reason != "" {
			verdict += ": " + s.Reason
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d |\n", s.Name, cell(verdict), cell(strings.Join(fos, "; ")), cell(strings.Join(ops, "; ")), s.Violations)
	}
	if len(r.Stages) > 0 {
		b.WriteString("\n## Deployment stages\n\n| stage | duration |\n|---|---|\n")
		for _, n := range slices.Sorted(maps.Keys(r.Stages)) {
			fmt.Fprintf(&b, "| %s | %v |\n", n, r.Stages[n].Round(time.Second))
		}
	}
	fmt.Fprintf(&b, "\n## Cost estimate\n\nACI $%.2f, registry $%.2f, storage ≤ $%.2f, logs ≤ $%.2f: **≈ $%.2f** (%s).\n",
		r.Cost.ACI, r.Cost.Registry, r.Cost.Storage, r.Cost.Logs, r.Cost.Total, r.Cost.Basis)
	b.WriteString("\nPer scenario: `Azure_<Scenario>.html` (timeline) and `.json` (summary, with the ARM figures under `extra`).\n")
	return b.String()
}

func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}
