package bench

import (
	"math"
	"strings"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

// Machine records where and how the numbers were made.
type Machine struct {
	Cores    int       `json:"cores"`
	CPU      string    `json:"cpu"`
	Kernel   string    `json:"kernel"`
	Go       string    `json:"go"`
	Azurite  string    `json:"azurite"`
	Started  time.Time `json:"started"`
	WallS    float64   `json:"wall_s"`
	Runs     int       `json:"bench_runs"`
	Parallel int       `json:"parallel"`
	Seed     uint64    `json:"seed"`
	Phases   []string  `json:"phases"`
	Command  string    `json:"command"`
}

// Results is everything one `make bench` measured.
type Results struct {
	Machine Machine         `json:"machine"`
	Runs    []RunResult     `json:"runs"` // failover runs and schedule runs
	Cost    []CostResult    `json:"cost"`
	Scale   []ScaleResult   `json:"scale"`
	RunMode []RunModeResult `json:"run_mode,omitempty"`
	// RunFreeze: supervisors frozen alone (RunModeFreezeRun).
	RunFreeze           []FreezeTrial  `json:"run_freeze,omitempty"`
	RunFreezeViolations map[string]int `json:"run_freeze_violations,omitempty"`
	// RunFaults: host-side faults on a supervisor and its guard (RunModeFaultRun).
	RunFaults []FaultTrial `json:"run_faults,omitempty"`
	// BlockedOutput: run mode with the supervisor's output blocked.
	BlockedOutput []BlockedOutputResult `json:"blocked_output,omitempty"`
	Shards        *ShardsResult         `json:"shards,omitempty"`
	Locks         *LocksResult          `json:"locks,omitempty"` // the locks phase (locks.go)
	Binaries      map[string]int64      `json:"binary_bytes"`
	Errors        []string              `json:"errors,omitempty"`
}

// Trials collects the conclusive trials of one flavor and kind.
func (r Results) Trials(flavor, kind string) []Trial {
	var out []Trial
	for _, run := range r.Runs {
		if run.Flavor == flavor && run.Kind == kind {
			for _, t := range run.Trials {
				if t.Note == "" && t.FromFault > 0 {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// Inconclusive counts the trials the checker could not judge.
func (r Results) Inconclusive(flavor, kind string) int {
	n := 0
	for _, run := range r.Runs {
		if run.Flavor == flavor && run.Kind == kind {
			for _, t := range run.Trials {
				if t.Note != "" || t.FromFault <= 0 {
					n++
				}
			}
		}
	}
	return n
}

// FromFault and FromBasis extract one measure from trials.
func FromFault(ts []Trial) []float64 { return column(ts, func(t Trial) float64 { return t.FromFault }) }
func FromBasis(ts []Trial) []float64 { return column(ts, func(t Trial) float64 { return t.FromBasis }) }

// column is one measure of every trial, in the trials' order.
func column[T any](ts []T, measure func(T) float64) []float64 {
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = measure(t)
	}
	return out
}

// Schedule returns the schedule run of a flavor.
func (r Results) Schedule(flavor string) (RunResult, bool) {
	for _, run := range r.Runs {
		if run.Flavor == flavor && run.Kind == "schedule" {
			return run, true
		}
	}
	return RunResult{}, false
}

// CostOf returns the cost run of a flavor.
func (r Results) CostOf(flavor string) (CostResult, bool) {
	for _, c := range r.Cost {
		if c.Flavor == flavor {
			return c, true
		}
	}
	return CostResult{}, false
}

// Violations sums the checker's violations by flavor and invariant.
func (r Results) Violations(flavor string) map[string]int {
	out := map[string]int{}
	for _, run := range r.Runs {
		if run.Flavor == flavor {
			for k, v := range run.Violations {
				out[k] += v
			}
		}
	}
	return out
}

// PerHour scales seconds in a run to seconds per hour.
func PerHour(v, runS float64) float64 {
	if runS <= 0 {
		return math.NaN()
	}
	return v * 3600 / runS
}

// countViolations counts v's violations by invariant into out and, when
// examples is not nil, keeps the first line of the first three there.
func countViolations(out map[string]int, examples *[]string, v checker.Verdict) {
	for _, x := range v.Violations {
		out[x.Invariant]++
		if examples != nil && len(*examples) < 3 {
			msg, _, _ := strings.Cut(x.Message, "\n")
			*examples = append(*examples, x.Invariant+": "+msg)
		}
	}
}
