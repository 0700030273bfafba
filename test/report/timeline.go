package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

// Geometry of the timeline, in SVG user units (pixels).
const (
	marginLeft   = 96.0   // lane labels
	marginRight  = 40.0   // room for the last axis label
	titleH       = 44.0   // title and subtitle
	annotRowH    = 17.0   // one row of failover annotations
	laneH        = 48.0   // one worker lane: a label strip, then the bars
	leaderH      = 22.0   // height of a leader bar
	followerH    = 8.0    // height of a follower bar
	axisH        = 30.0   // tick labels under the lanes
	legendRowH   = 18.0   // one legend row
	minPlotW     = 900.0  // narrowest plot
	maxPlotW     = 1464.0 // widest plot: the drawing fits 1,600 px with the margins
	pxPerSecWant = 14.0   // preferred scale, squeezed into [minPlotW, maxPlotW]
	charW        = 6.3    // rough width of one 11 px sans-serif character
)

var termPalette = []string{"#4e79a7", "#59a14f", "#edc948", "#b07aa1", "#76b7b2", "#f28e2b", "#9c755f", "#86bcb6"}

var faultColors = map[string]string{
	checker.FaultCrash:     "#e15759",
	checker.FaultGraceful:  "#4e9f3d",
	checker.FaultPause:     "#9c755f",
	checker.FaultLatency:   "#f28e2b",
	checker.FaultTimeout:   "#d4a017",
	checker.FaultReset:     "#b07aa1",
	checker.FaultPartition: "#ff6f91",
	checker.FaultOutage:    "#6b6b6b",
	checker.FaultBreak:     "#c2185b",
}

func faultColor(kind string) string {
	if c, ok := faultColors[kind]; ok {
		return c
	}
	return "#888888"
}

// timeline holds the scale of one drawing.
type timeline struct {
	start, end time.Time
	pxPerSec   float64
	plotW      float64
	lanes      map[string]int // identity -> lane index
	ids        []string
	annotRows  int
	lanesTop   float64
}

func (tl *timeline) x(t time.Time) float64 {
	s := t.Sub(tl.start).Seconds()
	s = math.Max(0, math.Min(s, tl.end.Sub(tl.start).Seconds()))
	return marginLeft + s*tl.pxPerSec
}

func (tl *timeline) laneY(id string) float64 { return tl.lanesTop + float64(tl.lanes[id])*laneH }

// laneMid is the centre line of a lane's bars, below the fault-label strip.
func (tl *timeline) laneMid(id string) float64 { return tl.laneY(id) + 14 + (laneH-14)/2 }

func (tl *timeline) lanesBottom() float64 { return tl.lanesTop + float64(len(tl.ids))*laneH }

// svgWriter writes elements with deterministic attribute formatting.
type svgWriter struct {
	b      bytes.Buffer
	indent int
}

func (w *svgWriter) line(format string, args ...any) {
	w.b.WriteString(strings.Repeat("  ", w.indent))
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

func (w *svgWriter) open(format string, args ...any) { w.line(format, args...); w.indent++ }
func (w *svgWriter) close(tag string)                { w.indent--; w.line("</%s>", tag) }
func (w *svgWriter) text(x, y float64, class, anchor, s string, extra string) {
	w.line(`<text class="%s" x="%s" y="%s" text-anchor="%s"%s>%s</text>`, class, f1(x), f1(y), anchor, extra, esc(s))
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// f1 formats a coordinate with one decimal, without a trailing ".0".
func f1(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

func fsec(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// WriteSVG draws the run's timeline as a standalone SVG document.
func WriteSVG(w io.Writer, run checker.Run, res checker.Result) error {
	_, err := w.Write(renderSVG(run, res))
	return err
}

func renderSVG(run checker.Run, res checker.Result) []byte {
	start, end := run.Bounds()
	if !end.After(start) {
		end = start.Add(time.Second)
	}
	dur := end.Sub(start).Seconds()
	tl := &timeline{start: start, end: end, lanes: map[string]int{}, ids: identities(run)}
	tl.plotW = math.Max(minPlotW, math.Min(maxPlotW, dur*pxPerSecWant))
	tl.pxPerSec = tl.plotW / dur
	for i, id := range tl.ids {
		tl.lanes[id] = i
	}
	annots := placeFailovers(tl, res.Failovers)
	tl.lanesTop = titleH + float64(tl.annotRows)*annotRowH + 8
	width := marginLeft + tl.plotW + marginRight
	legend := legendItems(run)
	height := tl.lanesBottom() + axisH + float64(legendRows(tl, legend))*legendRowH + 12

	w := &svgWriter{}
	w.line(`<?xml version="1.0" encoding="UTF-8"?>`)
	w.open(`<svg xmlns="http://www.w3.org/2000/svg" class="blobleader-timeline" width="%s" height="%s" viewBox="0 0 %s %s" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">`,
		f1(width), f1(height), f1(width), f1(height))
	title := fmt.Sprintf("blobleader run %s: %.1f s, %d workers, %d faults, %d terms, %d violations",
		start.UTC().Format(time.RFC3339), dur, len(tl.ids), len(run.Faults), len(res.Intervals), len(res.Violations))
	w.line(`<title>%s</title>`, esc(title))
	w.line(`<rect class="background" x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`, f1(width), f1(height))
	w.text(marginLeft, 18, "title", "start", title, ` font-size="14" font-weight="bold"`)
	verdict, color := "all invariants held (S1, S2, L1, L2)", "#2e7d32"
	if res.Outcome() == checker.VerdictInconclusive {
		verdict, color = "INCONCLUSIVE: no violation found, but the history is incomplete (details in the summary)", "#ef6c00"
		if len(res.Stalled) > 0 {
			verdict = fmt.Sprintf("INCONCLUSIVE: %d timing bound(s) missed within the machine's measured stall (orange marks; details in the summary)", len(res.Stalled))
		}
	}
	if len(res.Violations) > 0 {
		var invs []string
		seen := map[string]bool{}
		for _, v := range res.Violations {
			if !seen[v.Invariant] {
				seen[v.Invariant] = true
				invs = append(invs, v.Invariant)
			}
		}
		verdict, color = "VIOLATED: "+strings.Join(invs, ", ")+" (red marks; details in the summary)", "#c62828"
	}
	w.text(marginLeft, 35, "verdict", "start", verdict, fmt.Sprintf(` fill="%s"`, color))

	drawAxis(w, tl)
	drawLanes(w, tl, run, res)
	drawFaults(w, tl, run)
	drawStalls(w, tl, run.Sched)
	drawViolations(w, tl, res)
	drawFailovers(w, tl, annots)
	drawLegend(w, tl, legend, tl.lanesBottom()+axisH+4)
	w.close("svg")
	return w.b.Bytes()
}

func drawAxis(w *svgWriter, tl *timeline) {
	dur := tl.end.Sub(tl.start).Seconds()
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600} {
		step = s
		if s*tl.pxPerSec >= 70 {
			break
		}
	}
	w.open(`<g class="axis">`)
	top, bottom := tl.lanesTop, tl.lanesBottom()
	for s := 0.0; s <= dur+1e-9; s += step {
		x := marginLeft + s*tl.pxPerSec
		w.line(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e6e6e6" stroke-width="1"/>`, f1(x), f1(top), f1(x), f1(bottom))
		w.text(x, bottom+14, "tick", "middle", fmt.Sprintf("%gs", s), ` fill="#444444"`)
	}
	w.text(marginLeft+tl.plotW, bottom+27, "axis-label", "end", "seconds from run start", ` fill="#666666" font-size="10"`)
	w.close("g")
}

// span is one process lifetime of a worker on its lane.
type span struct{ from, to time.Time }

// processSpans guesses when each process of a worker was alive: from its
// first event to a kill, to its last event before a restart (its monotonic
// clock resets), or to the run end when it is still alive.
func processSpans(run checker.Run, id string, end time.Time) []span {
	var kills []time.Time
	for _, f := range run.Faults {
		if f.Kind == checker.FaultCrash && f.Target == id {
			kills = append(kills, f.Start)
		}
	}
	sort.Slice(kills, func(i, j int) bool { return kills[i].Before(kills[j]) })
	killIn := func(a, b time.Time) (time.Time, bool) {
		for _, k := range kills {
			if !k.Before(a) && !k.After(b) {
				return k, true
			}
		}
		return time.Time{}, false
	}
	var out []span
	var cur *span
	var last time.Time
	var prevMono int64
	for _, e := range run.Events {
		if e.Identity != id {
			continue
		}
		if cur != nil {
			if k, ok := killIn(last, e.T); ok {
				cur.to = k
				out, cur = append(out, *cur), nil
			} else if e.MonoNS > 0 && prevMono > 0 && e.MonoNS < prevMono {
				cur.to = last
				out, cur = append(out, *cur), nil
			}
		}
		if cur == nil {
			cur = &span{from: e.T}
		}
		last, prevMono = e.T, e.MonoNS
	}
	if cur != nil {
		alive := true
		for _, w := range run.Workers {
			if w.Identity == id {
				alive = w.Alive
			}
		}
		for _, f := range run.Faults {
			if f.Kind == checker.FaultGraceful && f.Target == id && !f.Start.Before(cur.from) && len(run.Workers) == 0 {
				alive = false
			}
		}
		switch k, killed := killIn(last, end); {
		case killed:
			cur.to = k
		case alive:
			cur.to = end
		default:
			cur.to = last
		}
		out = append(out, *cur)
	}
	return out
}

func drawLanes(w *svgWriter, tl *timeline, run checker.Run, res checker.Result) {
	w.open(`<g class="lanes">`)
	for _, id := range tl.ids {
		y := tl.laneY(id)
		mid := tl.laneMid(id)
		w.open(`<g class="lane" data-identity="%s">`, esc(id))
		w.line(`<rect class="lane-bg" x="%s" y="%s" width="%s" height="%s" fill="%s"/>`,
			f1(marginLeft), f1(y+1), f1(tl.plotW), f1(laneH-2), map[bool]string{true: "#f7f7f7", false: "#fbfbfb"}[tl.lanes[id]%2 == 0])
		w.text(marginLeft-8, mid+4, "lane-label", "end", id, ` font-weight="bold"`)
		for _, sp := range processSpans(run, id, tl.end) {
			x1, x2 := tl.x(sp.from), tl.x(sp.to)
			w.line(`<rect class="follower" x="%s" y="%s" width="%s" height="%s" fill="#c8c8c8"><title>%s</title></rect>`,
				f1(x1), f1(mid-followerH/2), f1(math.Max(x2-x1, 1)), f1(followerH),
				esc(fmt.Sprintf("%s process alive %s–%s", id, relS(tl, sp.from), relS(tl, sp.to))))
		}
		for _, iv := range res.Intervals {
			if iv.Identity != id {
				continue
			}
			x1, x2 := tl.x(iv.Start), tl.x(iv.End)
			wd := math.Max(x2-x1, 2)
			fill := termPalette[int(((iv.Term%int64(len(termPalette)))+int64(len(termPalette)))%int64(len(termPalette)))]
			stroke := `stroke="#333333" stroke-width="0.6"`
			class := "leader"
			if iv.EndedBy == checker.EndRunEnd && iv.Valid.Event == "" {
				stroke = `stroke="#c62828" stroke-width="2" stroke-dasharray="4 2"`
				class = "leader unbounded"
			}
			w.open(`<g class="%s" data-identity="%s" data-term="%d">`, class, esc(id), iv.Term)
			w.line(`<title>%s</title>`, esc(fmt.Sprintf("%s leader, term %d: %s–%s (%.3f s), ended by %s",
				id, iv.Term, relS(tl, iv.Start), relS(tl, iv.End), iv.End.Sub(iv.Start).Seconds(), iv.EndedBy)))
			w.line(`<rect x="%s" y="%s" width="%s" height="%s" rx="2" fill="%s" %s/>`, f1(x1), f1(mid-leaderH/2), f1(wd), f1(leaderH), fill, stroke)
			label := fmt.Sprintf("T%d", iv.Term)
			if wd >= float64(len(label))*charW+4 {
				w.text(x1+wd/2, mid+4, "term", "middle", label, ` fill="#ffffff" font-weight="bold"`)
			} else {
				// Too narrow to hold its label: put it above the bar.
				w.text(x1+wd/2, mid-leaderH/2-2, "term", "middle", label, ` fill="#333333" font-size="9"`)
			}
			w.close("g")
		}
		w.close("g")
	}
	w.close("g")
}

func relS(tl *timeline, t time.Time) string { return fmt.Sprintf("%.3fs", t.Sub(tl.start).Seconds()) }

func drawFaults(w *svgWriter, tl *timeline, run checker.Run) {
	faults := append([]checker.Fault(nil), run.Faults...)
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].Start.Before(faults[j].Start) })
	w.open(`<g class="faults">`)
	for _, f := range faults {
		color := faultColor(f.Kind)
		all := f.Target == "" || f.Target == checker.AllWorkers
		y1, y2 := tl.lanesTop, tl.lanesBottom()
		if !all {
			if _, ok := tl.lanes[f.Target]; !ok {
				continue
			}
			y1 = tl.laneY(f.Target)
			y2 = y1 + laneH
		}
		x1 := tl.x(f.Start)
		instant := f.End.IsZero() && (f.Kind == checker.FaultCrash || f.Kind == checker.FaultGraceful || f.Kind == checker.FaultBreak)
		x2 := tl.x(tl.end)
		if !f.End.IsZero() {
			x2 = tl.x(f.End)
		}
		target := f.Target
		if all {
			target = "all workers"
		}
		desc := fmt.Sprintf("%s on %s at %s", f.Kind, target, relS(tl, f.Start))
		if !f.End.IsZero() {
			desc += fmt.Sprintf(" until %s (%.1f s)", relS(tl, f.End), f.End.Sub(f.Start).Seconds())
		} else if !instant {
			desc += " (never healed)"
		}
		w.open(`<g class="fault fault-%s" data-kind="%s" data-target="%s">`, esc(f.Kind), esc(f.Kind), esc(f.Target))
		w.line(`<title>%s</title>`, esc(desc))
		if instant {
			w.line(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2.5"/>`, f1(x1), f1(y1), f1(x1), f1(y2), color)
			w.line(`<path d="M%s %s l-5 -7 h10 z" fill="%s"/>`, f1(x1), f1(y1+1), color)
			w.text(x1+4, y1+10, "fault-label", "start", f.Kind, fmt.Sprintf(` fill="%s" font-size="10" font-weight="bold"`, color))
		} else {
			w.line(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.22" stroke="%s" stroke-opacity="0.7" stroke-dasharray="3 2"/>`,
				f1(x1), f1(y1+1), f1(math.Max(x2-x1, 2)), f1(y2-y1-2), color, color)
			w.text(x1+3, y1+10, "fault-label", "start", f.Kind, fmt.Sprintf(` fill="%s" font-size="10" font-weight="bold"`, color))
		}
		w.close("g")
	}
	w.close("g")
}

// stallsOf is the probe's late wakes (none without a probe).
func stallsOf(sc *checker.Sched) []checker.Wake {
	if sc == nil {
		return nil
	}
	return sc.Late
}

// stallMarkMin is the shortest machine stall the timeline marks.
const stallMarkMin = 50 * time.Millisecond

// drawStalls marks, in a strip under the lanes, every stretch the CPU
// probe was due and not run for stallMarkMin or longer.
func drawStalls(w *svgWriter, tl *timeline, sc *checker.Sched) {
	if sc == nil {
		return
	}
	w.open(`<g class="machine-stalls">`)
	y := tl.lanesBottom() + 1
	for _, s := range stallsOf(sc) {
		if s.Late() < stallMarkMin || s.Woke.Before(tl.start) || s.Due.After(tl.end) {
			continue
		}
		x1, x2 := tl.x(s.Due), tl.x(s.Woke)
		w.open(`<g class="machine-stall">`)
		w.line(`<title>%s</title>`, esc(fmt.Sprintf("machine stalled %d ms from %s (CPU probe)", s.Late().Milliseconds(), relS(tl, s.Due))))
		w.line(`<rect x="%s" y="%s" width="%s" height="4" fill="#ef6c00"/>`, f1(x1), f1(y), f1(math.Max(x2-x1, 1.5)))
		w.close("g")
	}
	w.close("g")
}

func drawViolations(w *svgWriter, tl *timeline, res checker.Result) {
	w.open(`<g class="violations">`)
	drawMarks(w, tl, res.Violations, "violation", "#c62828")
	drawMarks(w, tl, res.Stalled, "stalled", "#ef6c00")
	w.close("g")
}

// drawMarks draws a triangle per violation on each of its workers' lanes.
func drawMarks(w *svgWriter, tl *timeline, vs []checker.Violation, class, color string) {
	for _, v := range vs {
		at, ids := v.At, v.Workers
		if at.IsZero() {
			// 1. Unplaced: use the latest piece of evidence.
			for _, e := range v.Evidence {
				if at.IsZero() || e.T.After(at) {
					at, ids = e.T, []string{e.Identity}
				}
			}
		}
		for _, id := range ids {
			if _, ok := tl.lanes[id]; !ok || at.IsZero() {
				continue // e.g. a ledger gap: it is in the summary
			}
			x, y := tl.x(at), tl.laneY(id)+laneH-2
			w.open(`<g class="%s" data-invariant="%s" data-identity="%s">`, class, esc(v.Invariant), esc(id))
			w.line(`<title>%s</title>`, esc(v.String()))
			w.line(`<path d="M%s %s l7 -13 l7 13 z" fill="%s" stroke="#ffffff" stroke-width="1"/>`, f1(x-7), f1(y), color)
			w.text(x, y-2, class+"-label", "middle", "!", ` fill="#ffffff" font-size="10" font-weight="bold"`)
			w.text(x+9, y-2, class+"-label", "start", v.Invariant, fmt.Sprintf(` fill="%s" font-size="10" font-weight="bold"`, color))
			w.close("g")
		}
	}
}

// annotation is one failover placed in a row above the lanes.
type annotation struct {
	f      checker.Failover
	row    int
	x1, x2 float64
	label  string
}

// placeFailovers assigns each failover annotation the first row where it
// does not collide with an earlier one.
func placeFailovers(tl *timeline, fos []checker.Failover) []annotation {
	var rows []float64 // right edge used so far, per row
	var out []annotation
	for _, f := range fos {
		a := annotation{f: f}
		a.x1 = tl.x(f.From)
		switch {
		case !f.To.IsZero():
			a.x2 = tl.x(f.To)
			a.label = fmt.Sprintf("%s %s (≤ %s)", f.Kind, fsec(f.Duration), fsec(f.Bound))
		default:
			a.x2 = tl.x(f.Deadline)
			a.label = fmt.Sprintf("%s: no leader (bound %s)", f.Kind, fsec(f.Bound))
		}
		if f.Inconclusive != "" {
			a.label = fmt.Sprintf("%s: inconclusive", f.Kind)
		}
		right := math.Max(a.x2, a.x1+float64(len([]rune(a.label)))*charW) + 6
		a.row = -1
		for i, edge := range rows {
			if edge < a.x1 {
				a.row, rows[i] = i, right
				break
			}
		}
		if a.row < 0 {
			a.row = len(rows)
			rows = append(rows, right)
		}
		out = append(out, a)
	}
	tl.annotRows = max(len(rows), 1)
	return out
}

func drawFailovers(w *svgWriter, tl *timeline, annots []annotation) {
	w.open(`<g class="failovers">`)
	for _, a := range annots {
		y := titleH + float64(a.row)*annotRowH + 12
		color, dash := "#2e7d32", ""
		switch {
		case a.f.Inconclusive != "":
			color, dash = "#777777", ` stroke-dasharray="3 3"`
		case a.f.To.IsZero() || a.f.To.After(a.f.Deadline):
			color = "#c62828"
		}
		w.open(`<g class="failover" data-kind="%s" data-leader="%s" data-new-leader="%s">`, esc(a.f.Kind), esc(a.f.Leader), esc(a.f.NewLeader))
		w.line(`<title>%s</title>`, esc(fmt.Sprintf("%s of %s (term %d) injected at %s; counted from %s at %s; new leader %s (term %d) at %s; %s, bound %s%s",
			a.f.Kind, a.f.Leader, a.f.Term, relS(tl, a.f.Injected), a.f.Basis, relS(tl, a.f.From), orNone(a.f.NewLeader), a.f.NewTerm,
			relIf(tl, a.f.To), fsec(a.f.Duration), fsec(a.f.Bound), incl(a.f.Inconclusive))))
		// Vertical guides from the annotation to the lanes mark From and To.
		w.line(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="0.8" stroke-opacity="0.5" stroke-dasharray="2 2"/>`,
			f1(a.x1), f1(y), f1(a.x1), f1(tl.lanesBottom()), color)
		if !a.f.To.IsZero() {
			w.line(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="0.8" stroke-opacity="0.5" stroke-dasharray="2 2"/>`,
				f1(a.x2), f1(y), f1(a.x2), f1(tl.lanesBottom()), color)
		}
		w.line(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, f1(a.x1), f1(y), f1(math.Max(a.x2, a.x1+1)), f1(y), color, dash)
		w.line(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`, f1(a.x1), f1(y-4), f1(a.x1), f1(y+4), color)
		w.line(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`, f1(a.x2), f1(y-4), f1(a.x2), f1(y+4), color)
		w.text(a.x1+2, y-3, "failover-label", "start", a.label, fmt.Sprintf(` fill="%s" font-size="10"`, color))
		w.close("g")
	}
	w.close("g")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func relIf(tl *timeline, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return relS(tl, t)
}

func incl(s string) string {
	if s == "" {
		return ""
	}
	return "; inconclusive: " + s
}

// legendItem is one swatch and its label; swatch is an element format with
// two %s for its x and y.
type legendItem struct{ class, swatch, label string }

func legendItems(run checker.Run) []legendItem {
	items := []legendItem{
		{"leader", `<rect x="%s" y="%s" width="18" height="11" rx="2" fill="#4e79a7"/>`, "leader (term Tn)"},
		{"follower", `<rect x="%s" y="%s" width="18" height="6" fill="#c8c8c8" transform="translate(0 2)"/>`, "alive, following"},
		{"unbounded", `<rect x="%s" y="%s" width="18" height="11" fill="none" stroke="#c62828" stroke-width="2" stroke-dasharray="4 2"/>`, "claim without deadline"},
	}
	kinds := map[string]bool{}
	for _, f := range run.Faults {
		kinds[f.Kind] = true
	}
	ks := make([]string, 0, len(kinds))
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		c := faultColor(k)
		items = append(items, legendItem{"fault-" + k, `<rect x="%s" y="%s" width="18" height="11" fill="` + c + `" fill-opacity="0.35" stroke="` + c + `"/>`, k})
	}
	items = append(items,
		legendItem{"failover", `<path d="M%s %s m0 5 h18" stroke="#2e7d32" stroke-width="2"/>`, "failover: duration from the bound's origin (≤ bound)"},
		legendItem{"violation", `<path d="M%s %s m2 11 l7 -11 l7 11 z" fill="#c62828"/>`, "violation"})
	for _, s := range stallsOf(run.Sched) {
		if s.Late() >= stallMarkMin {
			items = append(items,
				legendItem{"stalled", `<path d="M%s %s m2 11 l7 -11 l7 11 z" fill="#ef6c00"/>`, "timing bound missed within the stall (inconclusive)"},
				legendItem{"machine-stall", `<rect x="%s" y="%s" width="18" height="4" fill="#ef6c00" transform="translate(0 4)"/>`, fmt.Sprintf("machine stalled ≥%v (CPU probe)", stallMarkMin)})
			break
		}
	}
	return items
}

func legendWidth(it legendItem) float64 { return 22 + float64(len([]rune(it.label)))*charW + 16 }

// legendRows counts the rows the legend needs within the plot width.
func legendRows(tl *timeline, items []legendItem) int {
	rows, x := 1, 0.0
	for _, it := range items {
		if x > 0 && x+legendWidth(it) > tl.plotW {
			rows, x = rows+1, 0
		}
		x += legendWidth(it)
	}
	return rows
}

func drawLegend(w *svgWriter, tl *timeline, items []legendItem, top float64) {
	x, y := marginLeft, top
	w.open(`<g class="legend">`)
	for _, it := range items {
		if x > marginLeft && x-marginLeft+legendWidth(it) > tl.plotW {
			x, y = marginLeft, y+legendRowH
		}
		w.open(`<g class="legend-item legend-%s">`, it.class)
		w.line(it.swatch, f1(x), f1(y))
		w.text(x+22, y+9, "legend-label", "start", it.label, "")
		w.close("g")
		x += legendWidth(it)
	}
	w.close("g")
}
