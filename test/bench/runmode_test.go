package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender_RunModeSectionWithRatioAndTarget(t *testing.T) {
	tests := []struct {
		name   string
		trials []CommandTrial
		want   []string
	}{
		{"fast commands meet the target", []CommandTrial{{FromKill: 0.8, FromExit: 0.7}, {FromKill: 1.2, FromExit: 1.1}},
			[]string{"## 8. Run mode: command-crash failover", "| command SIGKILL → next command | 0.800 | 1.200 | 1.200 |", "| ratio in-process ÷ command | 17.5× | 12.1× | 12.1× |",
				"p99 ≤ 1.5 s: met", "| ours-run: RSS (VmRSS) | 12.0 MiB |", "| ours-run: CPU (utime + stime over 20 s; one clock tick = 0.05 %) | 0.50 % of one core |", "command crash → next command p99, from SIGKILL (§8) | 1.200 s"}},
		{"a slow one misses it", []CommandTrial{{FromKill: 0.8, FromExit: 0.7}, {FromKill: 2.5, FromExit: 2.4}},
			[]string{"p99 ≤ 1.5 s: **missed**"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			md := filepath.Join(dir, "benchmarks.md")
			r := Results{
				Machine: Machine{Runs: 20},
				Runs:    []RunResult{{Job: "ours-crash", Flavor: "ours", Kind: "crash", Trials: []Trial{{FromFault: 14, FromBasis: 15}, {FromFault: 14.5, FromBasis: 15.5}}}},
				RunMode: []RunModeResult{{Job: "ours-run", Trials: tt.trials, RSSBytes: 12 << 20, CPUPercent: 0.5, WindowS: 20, Violations: map[string]int{}}},
			}
			if err := Render(r, md, filepath.Join(dir, "bench"), "bench"); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(md)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(string(b), want) {
					t.Errorf("benchmarks.md lacks %q", want)
				}
			}
		})
	}
	// Without the phase, no section.
	dir := t.TempDir()
	md := filepath.Join(dir, "benchmarks.md")
	if err := Render(Results{}, md, filepath.Join(dir, "bench"), "bench"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(md); strings.Contains(string(b), "Run mode") {
		t.Error("a run without the run phase renders a run-mode section")
	}
}
