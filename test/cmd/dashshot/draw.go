package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Geometry: Grafana's 24-column grid, one row unit 30 px.
const (
	colW    = 60.0
	rowH    = 30.0
	gap     = 6.0
	headerH = 40.0
	titleH  = 22.0
	legendH = 16.0
	axisW   = 96.0
	axisH   = 16.0
)

var palette = []string{"#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#705da0", "#37872d", "#fade2a"}

// Grafana's named colours used by the dashboard.
var namedColors = map[string]string{"green": "#73bf69", "red": "#f2495c", "blue": "#5794f2", "yellow": "#fade2a", "transparent": "none"}

func color(name string) string {
	if c, ok := namedColors[name]; ok {
		return c
	}
	return name
}

type svg struct {
	w   io.Writer
	err error
}

func (s *svg) f(format string, args ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format+"\n", args...)
	}
}

func drawDashboard(w io.Writer, d *dashboardJSON, data [][]series, from, to time.Time) error {
	rows := 0
	for _, p := range d.Panels {
		if end := p.GridPos.Y + p.GridPos.H; end > rows {
			rows = end
		}
	}
	width, height := 24*colW+gap, headerH+float64(rows)*rowH+gap
	s := &svg{w: w}
	s.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Inter, Helvetica, Arial, sans-serif">`, width, height, width, height)
	s.f(`<rect width="100%%" height="100%%" fill="#111217"/>`)
	s.f(`<text x="%.0f" y="26" fill="#ccccdc" font-size="16" font-weight="600">%s</text>`, gap+4, html.EscapeString(d.Title))
	s.f(`<text x="%.0f" y="26" fill="#8e8e8e" font-size="11" text-anchor="end">%s – %s UTC · local run: Azurite, workers, Prometheus 2 s scrape · drawn by test/cmd/dashshot from the dashboard's queries</text>`,
		width-gap-4, from.UTC().Format("2006-01-02 15:04:05"), to.UTC().Format("15:04:05"))
	for i, p := range d.Panels {
		x := gap + float64(p.GridPos.X)*colW
		y := headerH + float64(p.GridPos.Y)*rowH
		pw, ph := float64(p.GridPos.W)*colW-gap, float64(p.GridPos.H)*rowH-gap
		s.f(`<g transform="translate(%.1f,%.1f)">`, x, y)
		s.f(`<rect width="%.1f" height="%.1f" rx="2" fill="#181b1f" stroke="#2c3235"/>`, pw, ph)
		s.f(`<text x="8" y="16" fill="#ccccdc" font-size="12" font-weight="500">%s</text>`, html.EscapeString(p.Title))
		switch p.Type {
		case "stat":
			drawStat(s, p, data[i], pw, ph)
		case "state-timeline":
			drawStateTimeline(s, p, data[i], from, to, pw, ph)
		default:
			drawTimeseries(s, p, data[i], from, to, pw, ph)
		}
		s.f(`</g>`)
	}
	s.f(`</svg>`)
	return s.err
}

func drawStat(s *svg, p panelJSON, data []series, pw, ph float64) {
	v, ok := lastValue(data)
	text, fill := "No data", "#8e8e8e"
	if ok {
		text = strconv.FormatFloat(v, 'f', -1, 64)
		fill = thresholdColor(p, v)
	}
	s.f(`<rect x="8" y="%.1f" width="%.1f" height="%.1f" fill="%s" opacity="0.85"/>`, titleH+4, pw-16, ph-titleH-12, fill)
	s.f(`<text x="%.1f" y="%.1f" fill="#ffffff" font-size="40" font-weight="600" text-anchor="middle" dominant-baseline="middle">%s</text>`, pw/2, titleH+(ph-titleH)/2, text)
}

func lastValue(data []series) (float64, bool) {
	var best point
	found := false
	for _, sr := range data {
		if n := len(sr.points); n > 0 && (!found || sr.points[n-1].t.After(best.t)) {
			best, found = sr.points[n-1], true
		}
	}
	return best.v, found
}

func thresholdColor(p panelJSON, v float64) string {
	c := "#73bf69"
	for _, st := range p.FieldConfig.Defaults.Thresholds.Steps {
		if st.Value == nil || v >= *st.Value {
			c = color(st.Color)
		}
	}
	return c
}

// mapping returns the mapped text and colour of value v, if the panel maps it.
func mapping(p panelJSON, v float64) (string, string, bool) {
	key := strconv.FormatFloat(v, 'f', -1, 64)
	for _, m := range p.FieldConfig.Defaults.Mappings {
		if o, ok := m.Options[key]; ok {
			return o.Text, color(o.Color), true
		}
	}
	return "", "", false
}

func drawStateTimeline(s *svg, p panelJSON, data []series, from, to time.Time, pw, ph float64) {
	sort.Slice(data, func(i, j int) bool { return data[i].legend < data[j].legend })
	labelW := 120.0
	top, bottom := titleH+4, ph-axisH-4
	if len(data) == 0 {
		s.f(`<text x="%.1f" y="%.1f" fill="#8e8e8e" font-size="12" text-anchor="middle">No data</text>`, pw/2, ph/2)
		return
	}
	laneH := math.Min(24, (bottom-top)/float64(len(data)))
	xOf := func(t time.Time) float64 {
		return labelW + (pw-labelW-8)*t.Sub(from).Seconds()/to.Sub(from).Seconds()
	}
	for i, sr := range data {
		y := top + float64(i)*laneH
		s.f(`<text x="8" y="%.1f" fill="#ccccdc" font-size="%.0f" dominant-baseline="middle">%s</text>`, y+laneH/2, math.Min(11, laneH-1), html.EscapeString(sr.legend))
		s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#22252b"/>`, labelW, y+1, pw-labelW-8, laneH-2)
		// Runs of one value, each drawn from its first to its last point
		// plus one step (2 s), the way Grafana joins a value until the next.
		for j := 0; j < len(sr.points); {
			k := j
			for k+1 < len(sr.points) && sr.points[k+1].v == sr.points[j].v && sr.points[k+1].t.Sub(sr.points[k].t) <= 3*time.Second {
				k++
			}
			_, fill, ok := mapping(p, sr.points[j].v)
			if !ok {
				fill = thresholdColor(p, sr.points[j].v)
			}
			if fill != "none" {
				x0, x1 := xOf(sr.points[j].t), xOf(sr.points[k].t.Add(2*time.Second))
				s.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x0, y+2, math.Max(1, x1-x0), laneH-4, fill)
			}
			j = k + 1
		}
	}
	drawTimeAxis(s, from, to, labelW, pw-8, ph-4)
}

func drawTimeseries(s *svg, p panelJSON, data []series, from, to time.Time, pw, ph float64) {
	sort.Slice(data, func(i, j int) bool { return data[i].legend < data[j].legend })
	left, right := axisW, pw-8
	legendRows := int(math.Ceil(float64(len(data)) / 4))
	top, bottom := titleH+6, ph-axisH-4-float64(legendRows)*legendH
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, sr := range data {
		for _, pt := range sr.points {
			if !math.IsNaN(pt.v) && !math.IsInf(pt.v, 0) {
				lo, hi = math.Min(lo, pt.v), math.Max(hi, pt.v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		s.f(`<text x="%.1f" y="%.1f" fill="#8e8e8e" font-size="12" text-anchor="middle">No data</text>`, pw/2, ph/2)
		return
	}
	// Rates and latencies from zero; plain numbers (terms: wall-clock
	// milliseconds) over their own range, so a change shows.
	if p.FieldConfig.Defaults.Unit != "none" {
		lo = math.Min(lo, 0)
	}
	if hi == lo {
		hi = lo + 1
	}
	xOf := func(t time.Time) float64 { return left + (right-left)*t.Sub(from).Seconds()/to.Sub(from).Seconds() }
	yOf := func(v float64) float64 { return bottom - (bottom-top)*(v-lo)/(hi-lo) }
	// Four grid lines, or one per whole number when the series are whole
	// numbers a few apart (terms), so no two labels read the same.
	ticks := 4
	if integral(data) && hi-lo < 4 {
		ticks = int(math.Max(1, hi-lo))
	}
	for i := 0; i <= ticks; i++ {
		v := lo + (hi-lo)*float64(i)/float64(ticks)
		y := yOf(v)
		s.f(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#2c3235"/>`, left, right, y, y)
		s.f(`<text x="%.1f" y="%.1f" fill="#8e8e8e" font-size="10" text-anchor="end" dominant-baseline="middle">%s</text>`, left-4, y, formatValue(v, p.FieldConfig.Defaults.Unit, hi-lo))
	}
	for i, sr := range data {
		c := palette[i%len(palette)]
		var b strings.Builder
		for j, pt := range sr.points {
			if math.IsNaN(pt.v) || math.IsInf(pt.v, 0) {
				continue
			}
			cmd := "L"
			if j == 0 || sr.points[j].t.Sub(sr.points[j-1].t) > 3*time.Second {
				cmd = "M"
			}
			fmt.Fprintf(&b, "%s%.1f,%.1f ", cmd, xOf(pt.t), yOf(pt.v))
		}
		s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.TrimSpace(b.String()), c)
		lx := left + float64(i%4)*(right-left)/4
		ly := bottom + axisH + 8 + float64(i/4)*legendH
		s.f(`<rect x="%.1f" y="%.1f" width="12" height="3" fill="%s"/>`, lx, ly-4, c)
		s.f(`<text x="%.1f" y="%.1f" fill="#ccccdc" font-size="10" dominant-baseline="middle">%s</text>`, lx+16, ly-2, html.EscapeString(sr.legend))
	}
	drawTimeAxis(s, from, to, left, right, bottom+axisH-2)
}

func formatValue(v float64, unit string, span float64) string {
	switch unit {
	case "s":
		if span < 0.1 {
			return fmt.Sprintf("%.1f ms", v*1000)
		}
		return fmt.Sprintf("%.2f s", v)
	case "reqps":
		return fmt.Sprintf("%.2g/s", v)
	}
	if math.Abs(v) >= 1e6 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func drawTimeAxis(s *svg, from, to time.Time, left, right, y float64) {
	span := to.Sub(from)
	step := time.Minute
	if span > 12*time.Minute {
		step = 2 * time.Minute
	}
	for t := from.Truncate(step).Add(step); t.Before(to); t = t.Add(step) {
		x := left + (right-left)*t.Sub(from).Seconds()/span.Seconds()
		s.f(`<text x="%.1f" y="%.1f" fill="#8e8e8e" font-size="10" text-anchor="middle">%s</text>`, x, y, t.UTC().Format("15:04"))
	}
}

func integral(data []series) bool {
	for _, sr := range data {
		for _, pt := range sr.points {
			if pt.v != math.Trunc(pt.v) {
				return false
			}
		}
	}
	return true
}
