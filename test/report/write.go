package report

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blobleader/blobleader/test/checker"
)

// WriteHTML writes a self-contained HTML page: the SVG timeline inline, then
// the violations and failovers as tables. No scripts, no external resources.
func WriteHTML(w io.Writer, run checker.Run, res checker.Result) error {
	return writeHTML(w, Summarize(run, res), run, res)
}

func writeHTML(w io.Writer, s Summary, run checker.Run, res checker.Result) error {
	svg := renderSVG(run, res)
	// The inline SVG must not carry its own XML declaration.
	svg = bytes.TrimPrefix(svg, []byte(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"))
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	fmt.Fprintf(&b, "<title>blobleader run %s</title>\n", esc(s.Start.UTC().Format("2006-01-02T15:04:05Z")))
	b.WriteString("<style>body{font-family:sans-serif;margin:16px;color:#222}" +
		".scroll{overflow-x:auto;border:1px solid #ddd}table{border-collapse:collapse;margin:8px 0 16px}" +
		"td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left;vertical-align:top}" +
		"th{background:#f2f2f2}.bad{color:#c62828}.ok{color:#2e7d32}.doubt{color:#ef6c00}pre{white-space:pre-wrap;margin:0}</style>\n")
	b.WriteString("</head>\n<body>\n")
	switch {
	case s.OK:
		b.WriteString("<h1 class=\"ok\">All invariants held</h1>\n")
	case s.Violations == 0:
		b.WriteString("<h1 class=\"doubt\">Inconclusive</h1>\n")
	default:
		fmt.Fprintf(&b, "<h1 class=\"bad\">%d violation(s)</h1>\n", s.Violations)
	}
	fmt.Fprintf(&b, "<p>%.1f s, %d workers, %d faults, %d terms, %d events, %d ledger entries, leaderless %.3f s (longest gap %.3f s).</p>\n",
		s.DurationSeconds, len(s.Workers), s.Faults, s.Terms, s.Events, s.LedgerEntries, s.LeaderlessS, s.LongestGapS)
	if s.Attempt > 1 {
		fmt.Fprintf(&b, "<p class=\"doubt\">Attempt %d: the %d run(s) before it were inconclusive.</p>\n", s.Attempt, s.Attempt-1)
	}
	if c := s.CPU; c != nil {
		fmt.Fprintf(&b, "<p>CPU probe: %d wakes of %g ms, %d at least %g ms late, %.3f s stalled in all, the longest %.3f s.</p>\n",
			c.Wakes, c.TickMS, c.Late, c.FloorMS, c.TotalS, c.MaxS)
	}
	b.WriteString("<div class=\"scroll\">\n")
	b.Write(svg)
	b.WriteString("</div>\n")

	if len(s.ViolationList) > 0 {
		b.WriteString("<h2>Violations</h2>\n<table class=\"violations\"><tr><th>invariant</th><th>message</th></tr>\n")
		for _, v := range s.ViolationList {
			fmt.Fprintf(&b, "<tr><td class=\"bad\">%s</td><td><pre>%s</pre></td></tr>\n", esc(v.Invariant), esc(v.Message))
		}
		b.WriteString("</table>\n")
	}
	if len(s.Stalled) > 0 {
		b.WriteString("<h2>Timing bounds missed within the machine's stall (inconclusive)</h2>\n<table class=\"stalled\"><tr><th>invariant</th><th>missed by s</th><th>stall s</th><th>message</th></tr>\n")
		for _, v := range s.Stalled {
			fmt.Fprintf(&b, "<tr><td class=\"doubt\">%s</td><td>%.3f</td><td>%.3f</td><td><pre>%s</pre></td></tr>\n", esc(v.Invariant), v.Miss, v.Stall, esc(v.Message))
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("<h2>Failovers by fault kind</h2>\n<table class=\"stats\"><tr><th>kind</th><th>count</th><th>p50 s</th><th>p99 s</th><th>max s</th><th>bound s</th><th>exceeded</th><th>stalled</th><th>inconclusive</th></tr>\n")
	for _, k := range slices.Sorted(maps.Keys(s.FailoversByKind)) {
		st := s.FailoversByKind[k]
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%d</td><td>%d</td><td>%d</td></tr>\n",
			esc(k), st.Count, st.P50, st.P99, st.Max, st.MaxBound, st.Exceeded, st.Stalled, st.Inconclusive)
	}
	b.WriteString("</table>\n")
	b.WriteString("<h2>Faults</h2>\n<table class=\"faults\"><tr><th>kind</th><th>count</th></tr>\n")
	for _, k := range slices.Sorted(maps.Keys(s.FaultsByKind)) {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td></tr>\n", esc(k), s.FaultsByKind[k])
	}
	b.WriteString("</table>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Files are the paths Write produced.
type Files struct {
	JSON, SVG, HTML string
}

// Option adds what the run alone does not say to a report's summary.
type Option func(*Summary)

// Attempt marks the report as the n-th run of its scenario (n > 1: the
// n−1 before it were inconclusive and retried).
func Attempt(n int) Option {
	return func(s *Summary) {
		if n > 1 {
			s.Attempt = n
		}
	}
}

// Write writes <name>.json (the summary), <name>.svg and <name>.html into dir,
// creating dir if needed.
func Write(dir, name string, run checker.Run, res checker.Result, opts ...Option) (Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("report: %w", err)
	}
	f := Files{
		JSON: filepath.Join(dir, name+".json"),
		SVG:  filepath.Join(dir, name+".svg"),
		HTML: filepath.Join(dir, name+".html"),
	}
	s := Summarize(run, res)
	for _, o := range opts {
		o(&s)
	}
	var js, svg, html bytes.Buffer
	if err := WriteJSON(&js, s); err != nil {
		return Files{}, fmt.Errorf("report: summary: %w", err)
	}
	if err := WriteSVG(&svg, run, res); err != nil {
		return Files{}, fmt.Errorf("report: svg: %w", err)
	}
	if err := writeHTML(&html, s, run, res); err != nil {
		return Files{}, fmt.Errorf("report: html: %w", err)
	}
	for path, b := range map[string][]byte{f.JSON: js.Bytes(), f.SVG: svg.Bytes(), f.HTML: html.Bytes()} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return Files{}, fmt.Errorf("report: %w", err)
		}
	}
	return f, nil
}
