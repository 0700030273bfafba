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
	s := Summarize(run, res)
	svg := renderSVG(run, res)
	// The inline SVG must not carry its own XML declaration.
	svg = bytes.TrimPrefix(svg, []byte(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"))
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	fmt.Fprintf(&b, "<title>blobleader run %s</title>\n", esc(s.Start.UTC().Format("2006-01-02T15:04:05Z")))
	b.WriteString("<style>body{font-family:sans-serif;margin:16px;color:#222}" +
		".scroll{overflow-x:auto;border:1px solid #ddd}table{border-collapse:collapse;margin:8px 0 16px}" +
		"td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left;vertical-align:top}" +
		"th{background:#f2f2f2}.bad{color:#c62828}.ok{color:#2e7d32}pre{white-space:pre-wrap;margin:0}</style>\n")
	b.WriteString("</head>\n<body>\n")
	if s.OK {
		b.WriteString("<h1 class=\"ok\">All invariants held</h1>\n")
	} else {
		fmt.Fprintf(&b, "<h1 class=\"bad\">%d violation(s)</h1>\n", s.Violations)
	}
	fmt.Fprintf(&b, "<p>%.1f s, %d workers, %d faults, %d terms, %d events, %d ledger entries, leaderless %.3f s (longest gap %.3f s).</p>\n",
		s.DurationSeconds, len(s.Workers), s.Faults, s.Terms, s.Events, s.LedgerEntries, s.LeaderlessS, s.LongestGapS)
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
	b.WriteString("<h2>Failovers by fault kind</h2>\n<table class=\"stats\"><tr><th>kind</th><th>count</th><th>p50 s</th><th>p99 s</th><th>max s</th><th>bound s</th><th>exceeded</th><th>inconclusive</th></tr>\n")
	for _, k := range slices.Sorted(maps.Keys(s.FailoversByKind)) {
		st := s.FailoversByKind[k]
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%d</td><td>%d</td></tr>\n",
			esc(k), st.Count, st.P50, st.P99, st.Max, st.MaxBound, st.Exceeded, st.Inconclusive)
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

// Write writes <name>.json (the summary), <name>.svg and <name>.html into dir,
// creating dir if needed.
func Write(dir, name string, run checker.Run, res checker.Result) (Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("report: %w", err)
	}
	f := Files{
		JSON: filepath.Join(dir, name+".json"),
		SVG:  filepath.Join(dir, name+".svg"),
		HTML: filepath.Join(dir, name+".html"),
	}
	var js, svg, html bytes.Buffer
	if err := WriteJSON(&js, Summarize(run, res)); err != nil {
		return Files{}, fmt.Errorf("report: summary: %w", err)
	}
	if err := WriteSVG(&svg, run, res); err != nil {
		return Files{}, fmt.Errorf("report: svg: %w", err)
	}
	if err := WriteHTML(&html, run, res); err != nil {
		return Files{}, fmt.Errorf("report: html: %w", err)
	}
	for path, b := range map[string][]byte{f.JSON: js.Bytes(), f.SVG: svg.Bytes(), f.HTML: html.Bytes()} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return Files{}, fmt.Errorf("report: %w", err)
		}
	}
	return f, nil
}
