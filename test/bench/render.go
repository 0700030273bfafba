package bench

import (
	"embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
)

// Targets (docs/benchmarks.md#targets; ours, defaults).
const (
	TargetCrashP99    = 16.2 // s, crash failover p99 (from the last successful renew)
	TargetGracefulP99 = 1.2  // s, SIGTERM → next started_leading, p99
	TargetOpsPerHour  = 4500 // storage ops per worker-hour (election)
)

// fixed is v with prec decimals, or "n/a" where there is no number (NaN,
// ±Inf): f1, f2 and f3 are the precisions the tables use.
func fixed(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

func f1(v float64) string { return fixed(v, 1) }
func f2(v float64) string { return fixed(v, 2) }
func f3(v float64) string { return fixed(v, 3) }

// f0 is v with no decimals and thousands separators, or "n/a".
func f0(v float64) string {
	s := fixed(v, 0)
	if s == "n/a" {
		return s
	}
	// thousands separators
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func ratio(a, b float64) string {
	r := Ratio(a, b)
	if math.IsNaN(r) {
		return "n/a"
	}
	if r < 1 {
		return fmt.Sprintf("%.2g×", r)
	}
	return fmt.Sprintf("%.1f×", r)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func met(ok bool, have bool) string {
	switch {
	case !have:
		return "not measured"
	case ok:
		return "met"
	default:
		return "**missed**"
	}
}

// statsRow is "p50 / p99 / max (min, sd; n)".
func statsCells(s Stats, fmtf func(float64) string) string {
	if s.N == 0 {
		return "n/a | n/a | n/a | n/a"
	}
	return fmt.Sprintf("%s | %s | %s | %s – %s, sd %s, n %d", fmtf(s.P50), fmtf(s.P99), fmtf(s.Max), fmtf(s.Min), fmtf(s.Max), fmtf(s.SD), s.N)
}

// templates are the markdown of docs/benchmarks.md (benchmarks.md.tmpl and
// the sections it includes) and of the takeover phase (takeover.md.tmpl).
//
//go:embed templates/*.md.tmpl
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"f0": f0, "f1": f1, "f2": f2, "f3": f3, "ratio": ratio, "met": met, "mib": mib,
	"cells":       func(s Stats, prec int) string { return statsCells(s, func(v float64) string { return fixed(v, prec) }) },
	"violations":  violationText,
	"causes":      causeText,
	"opsPerHour":  opsPerHourText,
	"electionOps": opsText,
	"electionUSD": func(byOp map[string]float64) float64 { return MonthlyUSD(byOp, IsElectionOp) },
	"perHour":     PerHour,
	"pct":         func(part, whole float64) float64 { return 100 * part / whole },
	"tickPercent": func(windowS float64) float64 { return 100 / clockTicks / windowS },
	"add":         func(a, b float64) float64 { return a + b },
	"div":         func(a, b float64) float64 { return a / b },
	"inc":         func(i int) int { return i + 1 },
	"float":       func(n int64) float64 { return float64(n) },
	"join":        strings.Join,
	"trimPrefix":  strings.TrimPrefix,
	"oneLine":     func(s string) string { return strings.ReplaceAll(s, "\n", " ") },
	"noPipes":     func(s string) string { return strings.ReplaceAll(s, "|", "/") },
	"scaleWindow": scaleWindowText,
	"locksTable":  func(r *LocksResult) string { return LocksSection(*r) },
}).ParseFS(templateFS, "templates/*.md.tmpl"))

// Render writes docs/benchmarks.md and its plots into plotDir (docs/bench);
// relPlots is plotDir as seen from the markdown file.
func Render(r Results, mdPath, plotDir, relPlots string) error {
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return err
	}
	d := newBenchDoc(r, relPlots)
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, "benchmarks.md.tmpl", d); err != nil {
		return fmt.Errorf("benchmarks.md: %w", err)
	}
	for name, data := range d.plots() {
		if err := os.WriteFile(filepath.Join(plotDir, name), data, 0o644); err != nil {
			return err
		}
	}
	if old, err := os.ReadFile(mdPath); err == nil {
		b.WriteString(keptSections(string(old), b.String()))
	}
	return os.WriteFile(mdPath, []byte(b.String()), 0o644)
}

// keptSections are the "## " sections of the old document whose headings
// the new one lacks: sections measured by separate invocations (§10, the
// takeover phase; §11 when the locks phase did not run) and kept by hand.
// A section the new document has replaces its old text.
func keptSections(old, doc string) string {
	has := map[string]bool{}
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "## ") {
			has[l] = true
		}
	}
	var out strings.Builder
	keep := false
	for _, l := range strings.SplitAfter(old, "\n") {
		if h := strings.TrimSuffix(l, "\n"); strings.HasPrefix(h, "## ") {
			keep = !has[h]
		}
		if keep {
			out.WriteString(l)
		}
	}
	if out.Len() == 0 {
		return ""
	}
	return "\n" + strings.TrimRight(out.String(), "\n") + "\n"
}

// benchDoc is what benchmarks.md.tmpl renders: the results, and the figures
// derived from them once.
type benchDoc struct {
	Results
	Rel          string // the plot directory as seen from the markdown
	Ours, Sample Flavor
	O, S         flavorFigures // ours and the sample's
	Both         []flavorFigures
	T            targets
	B            bounds
	// Big is the scale step the summary quotes: the one at 300 contenders,
	// else the last; BigCrash its crash failover from the last renew.
	Big      *ScaleResult
	BigCrash Stats
	// Commands are run mode's command-crash failovers, every job's trials.
	Commands          commandFigures
	CrashInconclusive int // crash trials of both flavors the checker could not judge
	Steps             []Step
	SlotS             float64
	FaultsPerHour     float64
	CostRows          []costRow
	ScaleRows         []scaleRow
	Missed            *missedTargets // nil when every measured target was met
	Timelines         []string
	Price             any // Price, the cost estimate's assumptions
}

// flavorFigures are one parameter set's figures.
type flavorFigures struct {
	Name                                  string // "ours" or "sample"
	Crash, Graceful                       []Trial
	CrashFromKill, CrashFromRenew         Stats // SIGKILL, or the last renew, → the next leader
	GracefulFromTerm, GracefulFromRelease Stats // SIGTERM, or the release, → the next leader
	Cost                                  CostResult
	HaveCost                              bool
	Leader, Follower                      RoleCost
	Sched                                 RunResult
	HaveSched                             bool
}

func figuresOf(r Results, name string) flavorFigures {
	f := flavorFigures{Name: name, Crash: r.Trials(name, "crash"), Graceful: r.Trials(name, "graceful")}
	f.CrashFromKill, f.CrashFromRenew = Summarize(FromFault(f.Crash)), Summarize(FromBasis(f.Crash))
	f.GracefulFromTerm, f.GracefulFromRelease = Summarize(FromFault(f.Graceful)), Summarize(FromBasis(f.Graceful))
	f.Cost, f.HaveCost = r.CostOf(name)
	f.Leader, _ = f.Cost.Leader()
	f.Follower, _ = f.Cost.Follower()
	f.Sched, f.HaveSched = r.Schedule(name)
	return f
}

// LeaderlessPerHour is the schedule run's leaderless seconds per hour.
func (f flavorFigures) LeaderlessPerHour() float64 {
	return PerHour(f.Sched.Leaderless, f.Sched.Seconds)
}

// ElectionUSDPerMonth is the estimated monthly cost of a 3-worker election
// (one leader, two followers), election ops only.
func (f flavorFigures) ElectionUSDPerMonth() float64 {
	return MonthlyUSD(f.Leader.ByOp, IsElectionOp) + 2*MonthlyUSD(f.Follower.ByOp, IsElectionOp)
}

// targets are the package's Target* constants, for the template.
type targets struct{ CrashP99, GracefulP99, OpsPerHour, CommandCrashP99 float64 }

// bounds are L1's bounds of both parameter sets, in seconds.
type bounds struct{ OursCrash, SampleCrash, OursAssertedCrash, OursGraceful, SampleGraceful float64 }

// commandFigures are run mode's command-crash failovers: SIGKILL of the
// command, and its reaped exit, → the next command.
type commandFigures struct{ FromKill, FromExit Stats }

// costRow is one row of the cost table.
type costRow struct {
	Name    string
	WindowS float64
	Role    RoleCost
	OK      bool // the cost run of its flavor ran
}

// scaleRow is one scale step with its crash failovers from the last renew
// and from the crash.
type scaleRow struct {
	ScaleResult
	FromRenew, FromCrash Stats
}

// missedTargets says which measured targets the run missed.
type missedTargets struct{ Crash, Graceful, Ops, Scale bool }

func newBenchDoc(r Results, rel string) *benchDoc {
	d := &benchDoc{Results: r, Rel: rel, Ours: Ours(""), Sample: Sample(""), O: figuresOf(r, "ours"), S: figuresOf(r, "sample"),
		T:     targets{TargetCrashP99, TargetGracefulP99, TargetOpsPerHour, TargetCommandCrashP99},
		Steps: Schedule(), SlotS: SlotLength.Seconds(), Price: Price}
	d.Both = []flavorFigures{d.O, d.S}
	d.B = bounds{d.Ours.crashBound().Seconds(), d.Sample.crashBound().Seconds(), d.Ours.assertedCrashBound().Seconds(),
		d.Ours.gracefulBound().Seconds(), d.Sample.gracefulBound().Seconds()}
	d.FaultsPerHour = float64(len(d.Steps)) * 3600 / (SlotLength.Seconds() * float64(len(d.Steps)))
	for i := range r.Scale {
		if r.Scale[i].N == 300 || (d.Big == nil && i == len(r.Scale)-1) {
			d.Big = &r.Scale[i]
		}
	}
	if d.Big != nil {
		d.BigCrash = Summarize(FromBasis(d.Big.Crash))
	}
	k, e := r.CommandTrials()
	d.Commands = commandFigures{Summarize(k), Summarize(e)}
	d.CrashInconclusive = r.Inconclusive("ours", "crash") + r.Inconclusive("sample", "crash")
	d.CostRows = []costRow{
		{"ours, leader", d.O.Cost.WindowS, d.O.Leader, d.O.HaveCost}, {"ours, follower (mean)", d.O.Cost.WindowS, d.O.Follower, d.O.HaveCost},
		{"sample, leader", d.S.Cost.WindowS, d.S.Leader, d.S.HaveCost}, {"sample, follower (mean)", d.S.Cost.WindowS, d.S.Follower, d.S.HaveCost},
	}
	for _, s := range r.Scale {
		d.ScaleRows = append(d.ScaleRows, scaleRow{s, Summarize(FromBasis(s.Crash)), Summarize(FromFault(s.Crash))})
	}
	d.Missed = d.missed()
	for _, run := range r.Runs {
		if run.Timeline != "" {
			d.Timelines = append(d.Timelines, fmt.Sprintf("- [%s](%s/%s) — %s, %s, %d faults, %.0f s", run.Job, rel, run.Timeline, run.Flavor, run.Kind, run.Faults, run.Seconds))
		}
	}
	slices.Sort(d.Timelines)
	return d
}

// missed is which of the targets this run measured it missed, or nil.
func (d *benchDoc) missed() *missedTargets {
	m := missedTargets{
		Crash:    d.O.CrashFromRenew.N > 0 && d.O.CrashFromRenew.P99 > TargetCrashP99,
		Graceful: d.O.GracefulFromTerm.N > 0 && d.O.GracefulFromTerm.P99 > TargetGracefulP99,
		Ops:      d.O.HaveCost && (d.O.Follower.Election > TargetOpsPerHour || d.O.Leader.Election > TargetOpsPerHour),
		Scale:    d.Big != nil && d.Big.N >= 300 && d.BigCrash.N > 0 && d.BigCrash.P99 > TargetCrashP99,
	}
	if m == (missedTargets{}) {
		return nil
	}
	return &m
}

// plots are the document's charts, by file name.
func (d *benchDoc) plots() map[string][]byte {
	o, s := d.O, d.S
	plots := map[string][]byte{
		"failover-crash.svg": ECDF("Crash failover (SIGKILL of the leader)", "seconds to the next started_leading", []Series{
			{Name: "ours, from last renew", Color: Palette[0], Values: FromBasis(o.Crash)},
			{Name: "ours, from SIGKILL", Color: Palette[0], Values: FromFault(o.Crash), Dashed: true},
			{Name: "sample, from last renew", Color: Palette[1], Values: FromBasis(s.Crash)},
			{Name: "sample, from SIGKILL", Color: Palette[1], Values: FromFault(s.Crash), Dashed: true},
		}, []Ref{
			{Label: fmt.Sprintf("ours bound L+1.1P+ε = %.1f s", d.B.OursAssertedCrash), X: d.B.OursAssertedCrash, Color: Palette[0]},
			{Label: fmt.Sprintf("sample L+1.1P+ε = %.0f s", d.Sample.assertedCrashBound().Seconds()), X: d.Sample.assertedCrashBound().Seconds(), Color: Palette[1]},
		}),
		"failover-graceful.svg": ECDF("Graceful handover (SIGTERM of the leader)", "seconds to the next started_leading", []Series{
			{Name: "ours, from SIGTERM", Color: Palette[0], Values: FromFault(o.Graceful)},
			{Name: "ours, from release", Color: Palette[0], Values: FromBasis(o.Graceful), Dashed: true},
			{Name: "sample, from SIGTERM", Color: Palette[1], Values: FromFault(s.Graceful)},
			{Name: "sample, from release", Color: Palette[1], Values: FromBasis(s.Graceful), Dashed: true},
		}, []Ref{
			{Label: fmt.Sprintf("ours target %.1f s", TargetGracefulP99), X: TargetGracefulP99, Color: Palette[0]},
			{Label: fmt.Sprintf("sample 1.1P = %.0f s", d.B.SampleGraceful), X: d.B.SampleGraceful, Color: Palette[1]},
		}),
	}
	if o.HaveCost || s.HaveCost {
		plots["cost.svg"] = Bars("Storage operations per worker-hour (election only)", "operations per hour", []string{"leader", "follower"}, []Series{
			{Name: "ours", Color: Palette[0], Values: []float64{o.Leader.Election, o.Follower.Election}},
			{Name: "sample", Color: Palette[1], Values: []float64{s.Leader.Election, s.Follower.Election}},
		})
	}
	if len(d.ScaleRows) > 0 {
		plots["scale.svg"] = d.scalePlot()
	}
	return plots
}

// scalePlot is the scale step's grid of charts by contender count.
func (d *benchDoc) scalePlot() []byte {
	var xs, firstL, crashP50, crashP99, latP50, latP99, azCPU, benchCPU []float64
	for _, s := range d.ScaleRows {
		xs = append(xs, float64(s.N))
		firstL = append(firstL, s.FirstLeaderS)
		crashP50 = append(crashP50, s.FromRenew.P50)
		crashP99 = append(crashP99, s.FromRenew.P99)
		latP50 = append(latP50, s.LatencyP50MS)
		latP99 = append(latP99, s.LatencyP99MS)
		azCPU = append(azCPU, s.AzuriteCPU)
		benchCPU = append(benchCPU, s.BenchCPU)
	}
	return Grid("Scale: N contenders on one Azurite (defaults L 15 s, P 1 s)", "contenders (log scale)", xs, true, 2, []Panel{
		{Title: "Time to first leader (cold start)", YLabel: "seconds", Series: []Series{{Name: "first leader", Color: Palette[0], Values: firstL}}},
		{Title: "Crash failover from the last renew", YLabel: "seconds", Series: []Series{{Name: "p50", Color: Palette[2], Values: crashP50}, {Name: "p99", Color: Palette[0], Values: crashP99}}, Refs: []float64{TargetCrashP99}, RefLabel: "target 16.2 s"},
		{Title: "Storage request latency", YLabel: "milliseconds", Series: []Series{{Name: "p50", Color: Palette[2], Values: latP50}, {Name: "p99", Color: Palette[0], Values: latP99}}},
		{Title: "CPU (100 % = one core)", YLabel: "percent", Series: []Series{{Name: "Azurite", Color: Palette[0], Values: azCPU}, {Name: "bench (N contenders)", Color: Palette[1], Values: benchCPU}}},
	})
}

// opsPerHourText is "op N, op N" of the ops with a count, in op order.
func opsPerHourText(byOp map[string]float64) string {
	var ops []string
	for _, op := range sortedKeys(byOp) {
		if byOp[op] > 0 {
			ops = append(ops, fmt.Sprintf("%s %s", op, f0(byOp[op])))
		}
	}
	return strings.Join(ops, ", ")
}

func violationText(v map[string]int) string { return countsText(v, " × ", "no violations") }

// countsText lists m as "key<sep>count" in key order, comma-separated, or
// none when m is empty.
func countsText(m map[string]int, sep, none string) string {
	if len(m) == 0 {
		return none
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s%s%d", k, sep, m[k]))
	}
	return strings.Join(parts, ", ")
}

func scaleWindowText(ss []ScaleResult) string {
	if len(ss) == 0 {
		return "n/a"
	}
	return f0(ss[0].WindowS)
}
