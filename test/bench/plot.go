package bench

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

// Plots are standalone SVG documents written by hand: no fonts, scripts or
// other external resources, deterministic for the same data.

// Series is one named set of values.
type Series struct {
	Name   string
	Color  string
	Values []float64 // ECDF: samples; bars and lines: one value per group / x
	Dashed bool
}

// Ref is a labelled vertical reference line (a bound, a target).
type Ref struct {
	Label string
	X     float64
	Color string
}

// Palette of the plots: ours blue, the sample orange, then others.
var Palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

type frame struct {
	x, y, w, h     float64 // plot area inside the panel
	x0, x1, y0, y1 float64 // data ranges
	logX           bool
	titleLift      float64 // extra room between the title and the plot (a legend row)
}

func (f frame) px(v float64) float64 {
	if f.logX {
		return f.x + f.w*(math.Log10(v)-math.Log10(f.x0))/(math.Log10(f.x1)-math.Log10(f.x0))
	}
	return f.x + f.w*(v-f.x0)/(f.x1-f.x0)
}

func (f frame) py(v float64) float64 { return f.y + f.h - f.h*(v-f.y0)/(f.y1-f.y0) }

// niceStep picks 1, 2 or 5 × 10^k so that span has about n ticks.
func niceStep(span float64, n int) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// niceMax rounds v up to a multiple of its tick step.
func niceMax(v float64, n int) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	s := niceStep(v, n)
	return math.Ceil(v/s-1e-9) * s
}

func fmtNum(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e7:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

type svg struct{ b bytes.Buffer }

func newSVG(w, h float64) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&s.b, `<rect width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", w, h)
	return s
}

func (s *svg) text(x, y float64, anchor, txt string, extra string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, extra, html.EscapeString(txt))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, extra string) {
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"%s/>`+"\n", x1, y1, x2, y2, stroke, extra)
}

func (s *svg) bytes() []byte {
	s.b.WriteString("</svg>\n")
	return s.b.Bytes()
}

// axes draws the frame's axes, grid and tick labels.
func (s *svg) axes(f frame, title, xlabel, ylabel string, xticks []float64) {
	s.text(f.x+f.w/2, f.y-12-f.titleLift, "middle", title, ` font-size="14" font-weight="bold"`)
	ys := niceStep(f.y1-f.y0, 5)
	for v := f.y0; v <= f.y1+1e-9; v += ys {
		y := f.py(v)
		s.line(f.x, y, f.x+f.w, y, "#e5e5e5", "")
		s.text(f.x-6, y+4, "end", fmtNum(v), "")
	}
	if xticks == nil {
		xs := niceStep(f.x1-f.x0, 8)
		for v := f.x0; v <= f.x1+1e-9; v += xs {
			xticks = append(xticks, v)
		}
	}
	for _, v := range xticks {
		x := f.px(v)
		s.line(x, f.y+f.h, x, f.y+f.h+4, "#333333", "")
		s.text(x, f.y+f.h+17, "middle", fmtNum(v), "")
	}
	s.line(f.x, f.y+f.h, f.x+f.w, f.y+f.h, "#333333", "")
	s.line(f.x, f.y, f.x, f.y+f.h, "#333333", "")
	s.text(f.x+f.w/2, f.y+f.h+34, "middle", xlabel, "")
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
		f.x-42, f.y+f.h/2, f.x-42, f.y+f.h/2, html.EscapeString(ylabel))
}

func (s *svg) legend(x, y float64, series []Series) {
	for i, se := range series {
		yy := y + float64(i)*16
		dash := ""
		if se.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		s.line(x, yy-4, x+18, yy-4, se.Color, ` stroke-width="2.5"`+dash)
		s.text(x+24, yy, "start", se.Name, "")
	}
}

// ECDF draws each series' empirical distribution (fraction of runs at or
// below x) as a step line, with reference lines.
func ECDF(title, xlabel string, series []Series, refs []Ref) []byte {
	const W, H = 760.0, 380.0
	s := newSVG(W, H+float64(len(series))*16+8)
	xmax := 0.0
	for _, se := range series {
		for _, v := range se.Values {
			xmax = max(xmax, v)
		}
	}
	for _, r := range refs {
		xmax = max(xmax, r.X)
	}
	f := frame{x: 70, y: 40, w: W - 100, h: H - 100, x0: 0, x1: niceMax(xmax*1.05, 8), y0: 0, y1: 1}
	s.axes(f, title, xlabel, "fraction of runs ≤ x", nil)
	for _, r := range refs {
		x := f.px(r.X)
		s.line(x, f.y, x, f.y+f.h, r.Color, ` stroke-dasharray="3 3"`)
		fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="end" transform="rotate(-90 %.1f %.1f)" fill="%s" font-size="11">%s</text>`+"\n",
			x-3, f.y+4, x-3, f.y+4, r.Color, html.EscapeString(r.Label))
	}
	for _, se := range series {
		vs := slices.Clone(se.Values)
		slices.Sort(vs)
		if len(vs) == 0 {
			continue
		}
		var pts []string
		prev := 0.0
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.px(vs[0]), f.py(0)))
		for i, v := range vs {
			y := float64(i+1) / float64(len(vs))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.px(v), f.py(prev)), fmt.Sprintf("%.1f,%.1f", f.px(v), f.py(y)))
			prev = y
		}
		dash := ""
		if se.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(&s.b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", se.Color, dash, strings.Join(pts, " "))
		for _, v := range vs {
			fmt.Fprintf(&s.b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`+"\n", f.px(v), f.y+f.h-3, se.Color)
		}
	}
	s.legend(f.x, H+4, series)
	return s.bytes()
}

// Bars draws grouped bars: one group per label, one bar per series.
func Bars(title, ylabel string, groups []string, series []Series) []byte {
	const W, H = 760.0, 380.0
	s := newSVG(W, H+float64(len(series))*16+8)
	ymax := 0.0
	for _, se := range series {
		for _, v := range se.Values {
			if !math.IsNaN(v) {
				ymax = max(ymax, v)
			}
		}
	}
	f := frame{x: 80, y: 40, w: W - 110, h: H - 100, x0: 0, x1: float64(len(groups)), y0: 0, y1: niceMax(ymax*1.1, 5)}
	s.axes(f, title, "", ylabel, []float64{})
	gw := f.w / float64(len(groups))
	bw := gw * 0.8 / float64(max(len(series), 1))
	for g, label := range groups {
		gx := f.x + float64(g)*gw
		s.text(gx+gw/2, f.y+f.h+17, "middle", label, "")
		for i, se := range series {
			if g >= len(se.Values) || math.IsNaN(se.Values[g]) {
				continue
			}
			v := se.Values[g]
			x := gx + gw*0.1 + float64(i)*bw
			fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, f.py(v), bw*0.92, f.py(0)-f.py(v), se.Color)
			s.text(x+bw*0.46, f.py(v)-4, "middle", fmtNum(v), ` font-size="11"`)
		}
	}
	s.legend(f.x, H+4, series)
	return s.bytes()
}

// Panel is one small line chart of a Grid.
type Panel struct {
	Title, YLabel string
	Series        []Series // Values[i] belongs to xs[i]; NaN leaves a gap
	Refs          []float64
	RefLabel      string
}

// Grid draws panels in a grid of cols columns, each a line chart over the
// same xs (log scale when logX).
func Grid(title, xlabel string, xs []float64, logX bool, cols int, panels []Panel) []byte {
	const PW, PH = 380.0, 280.0
	rows := (len(panels) + cols - 1) / cols
	W, H := PW*float64(cols), PH*float64(rows)+40
	s := newSVG(W, H)
	s.text(W/2, 22, "middle", title, ` font-size="15" font-weight="bold"`)
	xmin, xmax := xs[0], xs[0]
	for _, x := range xs {
		xmin, xmax = min(xmin, x), max(xmax, x)
	}
	if logX {
		xmin, xmax = xmin/1.5, xmax*1.5
	} else {
		pad := (xmax - xmin) * 0.05
		xmin, xmax = xmin-pad, xmax+pad
	}
	for i, p := range panels {
		ox := float64(i%cols) * PW
		oy := 40 + float64(i/cols)*PH
		ymax := 0.0
		for _, se := range p.Series {
			for _, v := range se.Values {
				if !math.IsNaN(v) {
					ymax = max(ymax, v)
				}
			}
		}
		for _, r := range p.Refs {
			ymax = max(ymax, r)
		}
		f := frame{x: ox + 65, y: oy + 48, w: PW - 90, h: PH - 108, x0: xmin, x1: xmax, y0: 0, y1: niceMax(ymax*1.1, 5), logX: logX, titleLift: 16}
		s.axes(f, p.Title, xlabel, p.YLabel, xs)
		for _, r := range p.Refs {
			s.line(f.x, f.py(r), f.x+f.w, f.py(r), "#d62728", ` stroke-dasharray="3 3"`)
			s.text(f.x+f.w, f.py(r)-4, "end", p.RefLabel, ` fill="#d62728" font-size="11"`)
		}
		for _, se := range p.Series {
			var pts []string
			for j, v := range se.Values {
				if j >= len(xs) || math.IsNaN(v) {
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.px(xs[j]), f.py(v)))
				fmt.Fprintf(&s.b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", f.px(xs[j]), f.py(v), se.Color)
			}
			fmt.Fprintf(&s.b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", se.Color, strings.Join(pts, " "))
		}
		if len(p.Series) > 1 {
			// One row between the title and the plot, so it hides nothing.
			lx := f.x
			for _, se := range p.Series {
				s.line(lx, f.y-8, lx+18, f.y-8, se.Color, ` stroke-width="2.5"`)
				s.text(lx+22, f.y-4, "start", se.Name, ` font-size="11"`)
				lx += 40 + 6.5*float64(len(se.Name))
			}
		}
	}
	return s.bytes()
}
