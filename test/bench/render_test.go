package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRender_EmptyResultsStillRender(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "benchmarks.md")
	r := Results{Machine: Machine{Runs: 2, Cores: 2, Started: time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)}}
	if err := Render(r, md, filepath.Join(dir, "bench"), "bench"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"BENCH_RUNS=2", "a smoke run", "| cores | 2", "n/a"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("benchmarks.md lacks %q", want)
		}
	}
}

func TestRender_FiguresRatiosAndMissedTargets(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "benchmarks.md")
	run := func(flavor, kind string, ts ...Trial) RunResult {
		return RunResult{Job: flavor + "-" + kind, Flavor: flavor, Kind: kind, Violations: map[string]int{}, Timeline: "timeline-" + flavor + "-" + kind + ".svg", Trials: ts}
	}
	r := Results{
		Machine: Machine{Runs: 20},
		Runs: []RunResult{
			run("ours", "crash", Trial{FromFault: 14, FromBasis: 15.2}, Trial{FromFault: 14.5, FromBasis: 16.5}),
			run("sample", "crash", Trial{FromFault: 20, FromBasis: 22}, Trial{FromFault: 30, FromBasis: 33}),
			run("ours", "graceful", Trial{FromFault: 0.1, FromBasis: 0.05}, Trial{FromFault: 0.2, FromBasis: 0.1}),
			run("sample", "graceful", Trial{FromFault: 10, FromBasis: 9.9}, Trial{FromFault: 19, FromBasis: 18.9}),
		},
		Cost: []CostResult{{Flavor: "ours", Workers: []RoleCost{
			{Role: "leader", ByOp: map[string]float64{"renew": 1800}, Election: 1800},
			{Role: "follower", ByOp: map[string]float64{"acquire": 3600, "get": 360}, Election: 3960},
		}}},
		Binaries: map[string]int64{"worker": 20 << 20},
	}
	if err := Render(r, md, filepath.Join(dir, "bench"), "bench"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(md)
	doc := string(b)
	for _, want := range []string{
		"| crash failover p99, from the last renew | 16.50 s | 33.00 s | 2.0× | ≤ 16.2 s | **missed** |",
		"| graceful handover p99, SIGTERM → new leader | 0.200 s | 19.000 s | 95.0× | ≤ 1.2 s | met |",
		"| storage ops per hour, follower | 3,960 |",
		"Crash failover p99 16.50 s > 16.2 s",
		"timeline-ours-crash.svg",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("benchmarks.md lacks %q", want)
		}
	}
	if strings.Contains(doc, "BENCH_RUNS=20** —") {
		t.Error("a 20-run result is labelled a smoke run")
	}
	for _, p := range []string{"failover-crash.svg", "failover-graceful.svg", "cost.svg"} {
		if _, err := os.Stat(filepath.Join(dir, "bench", p)); err != nil {
			t.Errorf("plot %s not written: %v", p, err)
		}
	}
}

func TestF0_ThousandsSeparators(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := f0(in); got != want {
			t.Errorf("f0(%v) = %q, want %q", in, got, want)
		}
	}
}

// The crash chart marks the bound the checker asserts and the README
// states, L + 1.1·P + ε (17.1 s at the defaults), not L + 1.1·P.
func TestRender_CrashChartMarksTheAssertedBound(t *testing.T) {
	dir := t.TempDir()
	r := Results{Machine: Machine{Runs: 2}, Runs: []RunResult{{Job: "ours-crash", Flavor: "ours", Kind: "crash", Violations: map[string]int{},
		Trials: []Trial{{FromFault: 14, FromBasis: 15.2, Bound: 17.1}, {FromFault: 14.5, FromBasis: 15.5, Bound: 17.1}}}}}
	if err := Render(r, filepath.Join(dir, "benchmarks.md"), filepath.Join(dir, "bench"), "bench"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bench", "failover-crash.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if svg := string(b); !strings.Contains(svg, "= 17.1 s") || strings.Contains(svg, "16.1 s") {
		t.Fatalf("the crash chart does not mark the asserted bound 17.1 s:\n%s", svg)
	}
}

// renderSection renders one section template of benchmarks.md from r.
func renderSection(t *testing.T, name string, r Results) string {
	t.Helper()
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, name, newBenchDoc(r, "bench")); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b.String()
}

// Sections measured by separate invocations (early takeover, §10) are kept
// by hand in docs/benchmarks.md; a full re-render must not drop them, and a
// section the run measured replaces its old text.
func TestRender_KeepsSectionsItDoesNotWrite(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "benchmarks.md")
	r := Results{Machine: Machine{Runs: 1}}
	if err := Render(r, md, filepath.Join(dir, "bench"), "bench"); err != nil {
		t.Fatal(err)
	}
	doc, _ := os.ReadFile(md)
	kept := "## 10. Early takeover: host loss on the fast profile\n\nMeasured by hand: 6.56 s.\n\n"
	old := "## 11. Named resource locks\n\nan old table\n"
	if err := os.WriteFile(md, append(doc, []byte("\n"+kept+old)...), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Locks = &LocksResult{Throughput: 123, ThroughputWin: 30}
	if err := Render(r, md, filepath.Join(dir, "bench"), "bench"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(md)
	switch s := string(got); {
	case !strings.Contains(s, strings.TrimSpace(kept)):
		t.Errorf("the re-render dropped the hand-kept section:\n%s", s)
	case strings.Contains(s, "an old table") || !strings.Contains(s, "123 /s"):
		t.Errorf("§11 is not the one this run measured:\n%s", s)
	case strings.Count(s, "## 11. Named resource locks") != 1:
		t.Errorf("§11 %d times", strings.Count(s, "## 11. Named resource locks"))
	}
}
