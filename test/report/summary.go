package report

import (
	"encoding/json"
	"io"
	"math"
	"sort"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

// Stats are failover durations for one fault kind, in seconds.
type Stats struct {
	Count        int     `json:"count"`        // failovers measured (conclusive)
	Inconclusive int     `json:"inconclusive"` // the run could not tell
	Exceeded     int     `json:"exceeded"`     // longer than their bound (L1 violations)
	Stalled      int     `json:"stalled"`      // longer than their bound by no more than the machine stalled (inconclusive)
	P50          float64 `json:"p50_s"`
	P99          float64 `json:"p99_s"`
	Max          float64 `json:"max_s"`
	MaxBound     float64 `json:"max_bound_s"` // the largest bound among them
}

// FailoverRow is one failover, with times in seconds from the run start.
type FailoverRow struct {
	Kind         string  `json:"kind"`
	Target       string  `json:"target,omitempty"`
	Leader       string  `json:"leader"`
	Term         int64   `json:"term"`
	NewLeader    string  `json:"new_leader,omitempty"`
	NewTerm      int64   `json:"new_term,omitempty"`
	Injected     float64 `json:"injected_s"`
	From         float64 `json:"from_s"`
	Basis        string  `json:"basis"`
	To           float64 `json:"to_s,omitempty"` // absent when no leader appeared
	Duration     float64 `json:"duration_s"`     // To − From
	SinceFault   float64 `json:"since_fault_s"`  // To − Injected (what an operator sees)
	Bound        float64 `json:"bound_s"`
	Deadline     float64 `json:"deadline_s"`
	Inconclusive string  `json:"inconclusive,omitempty"`
	Stall        float64 `json:"stall_s,omitempty"` // past the deadline: how long the machine stalled in its window
}

// ViolationRow is one violation.
type ViolationRow struct {
	Invariant string   `json:"invariant"`
	Message   string   `json:"message"`
	At        *float64 `json:"at_s,omitempty"` // seconds from the run start, when placed
	Workers   []string `json:"workers,omitempty"`
	Miss      float64  `json:"miss_s,omitempty"`  // a timing bound: how late
	Stall     float64  `json:"stall_s,omitempty"` // a timing bound: how long the machine stalled in its window
}

// CPUProbe is the harness's CPU probe over the run (checker.Sched).
type CPUProbe struct {
	TickMS  float64  `json:"tick_ms"`
	Wakes   int      `json:"wakes"`
	Late    int      `json:"late"`          // wakes at least floor_ms late
	FloorMS float64  `json:"floor_ms"`      // (the ones recorded)
	TotalS  float64  `json:"total_stall_s"` // their lateness summed: how long the machine stalled
	MaxS    float64  `json:"max_stall_s"`   // the latest wake
	MaxAt   *float64 `json:"max_at_s,omitempty"`
	// StorageS: how long storage kept the harness's storage probe waiting
	// past its floor, in all (counted with the CPU stall in every bound).
	StorageS float64 `json:"storage_stall_s,omitempty"`
}

// Summary is the JSON summary of a run.
type Summary struct {
	OK              bool               `json:"ok"`                          // passed: no violations and a complete history
	Verdict         string             `json:"verdict"`                     // pass, fail or inconclusive (checker.Verdict*)
	Inconclusive    []string           `json:"inconclusive,omitempty"`      // why the history is known incomplete
	Stalled         []ViolationRow     `json:"stalled,omitempty"`           // timing bounds missed within the machine's measured stall (inconclusive)
	CPU             *CPUProbe          `json:"cpu_probe,omitempty"`         // the machine's promptness during the run; absent without a probe
	Attempt         int                `json:"attempt,omitempty"`           // which run of the scenario this is: n after n−1 inconclusive ones (absent: the first)
	Duplicates      int                `json:"duplicate_records,omitempty"` // repeated records set aside
	Start           time.Time          `json:"start"`
	End             time.Time          `json:"end"`
	DurationSeconds float64            `json:"duration_s"`
	Workers         []string           `json:"workers"`
	Events          int                `json:"events"`
	Terms           int                `json:"terms"` // leadership intervals
	LedgerEntries   int                `json:"ledger_entries"`
	FaultsByKind    map[string]int     `json:"faults_by_kind"`
	Faults          int                `json:"faults"`
	Violations      int                `json:"violations"`
	ByInvariant     map[string]int     `json:"violations_by_invariant"`
	ViolationList   []ViolationRow     `json:"violation_list"`
	FailoversByKind map[string]Stats   `json:"failovers_by_kind"`
	Failovers       []FailoverRow      `json:"failover_list"`
	LeaderlessS     float64            `json:"leaderless_s"` // run time with no belief interval
	LongestGapS     float64            `json:"longest_leaderless_s"`
	Extra           map[string]float64 `json:"extra,omitempty"` // caller's own figures (e.g. storage ops per worker-hour)
}

// Summarize computes the summary of a checked run.
func Summarize(run checker.Run, res checker.Result) Summary {
	start, end := run.Bounds()
	s := Summary{
		OK:              res.OK(),
		Verdict:         res.Outcome(),
		Inconclusive:    res.Inconclusive,
		Duplicates:      res.Duplicates,
		Start:           start,
		End:             end,
		DurationSeconds: secs(end.Sub(start)),
		Workers:         identities(run),
		Events:          len(run.Events),
		Terms:           len(res.Intervals),
		LedgerEntries:   len(run.Ledger),
		FaultsByKind:    map[string]int{},
		Faults:          len(run.Faults),
		Violations:      len(res.Violations),
		ByInvariant:     map[string]int{},
		ViolationList:   []ViolationRow{},
		FailoversByKind: map[string]Stats{},
		Failovers:       []FailoverRow{},
	}
	for _, f := range run.Faults {
		s.FaultsByKind[f.Kind]++
	}
	row := func(v checker.Violation) ViolationRow {
		r := ViolationRow{Invariant: v.Invariant, Message: v.Message, Workers: v.Workers, Miss: secs(v.Miss), Stall: secs(v.Stall)}
		if !v.At.IsZero() {
			at := secs(v.At.Sub(start))
			r.At = &at
		}
		return r
	}
	for _, v := range res.Violations {
		s.ByInvariant[v.Invariant]++
		s.ViolationList = append(s.ViolationList, row(v))
	}
	for _, v := range res.Stalled {
		s.Stalled = append(s.Stalled, row(v))
	}
	s.CPU = cpuProbe(run.Sched, start)
	durs := map[string][]float64{}
	for _, f := range res.Failovers {
		rel := func(t time.Time) float64 { return secs(t.Sub(start)) }
		row := FailoverRow{
			Kind: f.Kind, Target: f.Target, Leader: f.Leader, Term: f.Term, NewLeader: f.NewLeader, NewTerm: f.NewTerm,
			Injected: rel(f.Injected), From: rel(f.From), Basis: f.Basis, Duration: secs(f.Duration),
			Bound: secs(f.Bound), Deadline: rel(f.Deadline), Inconclusive: f.Inconclusive, Stall: secs(f.Stall),
		}
		st := s.FailoversByKind[f.Kind]
		if !f.To.IsZero() {
			row.To, row.SinceFault = rel(f.To), secs(f.To.Sub(f.Injected))
		}
		switch {
		case f.Inconclusive != "":
			st.Inconclusive++
		default:
			st.Count++
			durs[f.Kind] = append(durs[f.Kind], secs(f.Duration))
			switch {
			case !f.To.IsZero() && f.To.After(f.Deadline) && f.To.Sub(f.Deadline) <= f.Stall:
				st.Stalled++
			case f.To.IsZero() || f.To.After(f.Deadline):
				st.Exceeded++
			}
		}
		st.MaxBound = math.Max(st.MaxBound, secs(f.Bound))
		s.FailoversByKind[f.Kind] = st
		s.Failovers = append(s.Failovers, row)
	}
	for kind, d := range durs {
		sort.Float64s(d)
		st := s.FailoversByKind[kind]
		st.P50, st.P99, st.Max = percentile(d, 50), percentile(d, 99), d[len(d)-1]
		s.FailoversByKind[kind] = st
	}
	s.LeaderlessS, s.LongestGapS = leaderless(res.Intervals, start, end)
	return s
}

// cpuProbe summarises the CPU probe's record; nil without one.
func cpuProbe(sc *checker.Sched, start time.Time) *CPUProbe {
	if sc == nil {
		return nil
	}
	c := &CPUProbe{TickMS: float64(sc.Tick.Microseconds()) / 1000, Wakes: sc.Wakes, Late: len(sc.Late),
		FloorMS: float64(sc.Floor.Microseconds()) / 1000, TotalS: secs(sc.Total()), StorageS: secs(sc.StorageTotal())}
	if m := sc.Max(); m.Late() > 0 {
		at := secs(m.Due.Sub(start))
		c.MaxS, c.MaxAt = secs(m.Late()), &at
	}
	return c
}

// WriteJSON writes the summary as indented JSON.
func WriteJSON(w io.Writer, s Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// leaderless returns the total time in [start, end] no belief interval
// covers, and the longest such gap, in seconds.
func leaderless(ivs []checker.Interval, start, end time.Time) (total, longest float64) {
	sorted := append([]checker.Interval(nil), ivs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Start.Before(sorted[j].Start) })
	cursor := start
	gap := func(to time.Time) {
		if to.After(cursor) {
			d := secs(to.Sub(cursor))
			total += d
			longest = math.Max(longest, d)
		}
	}
	for _, iv := range sorted {
		if !iv.Start.Before(end) {
			break
		}
		gap(iv.Start)
		if iv.End.After(cursor) {
			cursor = iv.End
		}
	}
	gap(end)
	return round3(total), round3(longest)
}

func secs(d time.Duration) float64 { return round3(d.Seconds()) }

// round3 keeps milliseconds so JSON output does not drift in the last digit.
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// identities returns every worker identity in the run, sorted.
func identities(run checker.Run) []string {
	seen := map[string]bool{}
	for _, e := range run.Events {
		seen[e.Identity] = true
	}
	for _, w := range run.Workers {
		seen[w.Identity] = true
	}
	for _, f := range run.Faults {
		if f.Target != "" && f.Target != checker.AllWorkers {
			seen[f.Target] = true
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
