package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/blobleader/blobleader/test/checker"
)

// WriteShardSVG draws who owned what over time in a --shards run: one lane
// per shard, one bar per ownership interval (coloured and labelled by the
// owner), the faults as bands across every lane, and the shard violations
// as red marks on the lanes of the shards they name.
func WriteShardSVG(w io.Writer, run checker.ShardRun, res checker.ShardResult) error {
	_, err := w.Write(renderShardSVG(run, res))
	return err
}

func renderShardSVG(run checker.ShardRun, res checker.ShardResult) []byte {
	start, end := run.Bounds()
	if !end.After(start) {
		end = start.Add(time.Second)
	}
	dur := end.Sub(start).Seconds()
	tl := &timeline{start: start, end: end}
	tl.plotW = math.Max(minPlotW, math.Min(maxPlotW, dur*pxPerSecWant))
	tl.pxPerSec = tl.plotW / dur
	const shardLaneH = 26.0
	tl.lanesTop = titleH + 4
	owners := ownersOf(res)
	color := map[string]string{}
	for i, id := range owners {
		color[id] = termPalette[i%len(termPalette)]
	}
	lanesBottom := tl.lanesTop + float64(run.Shards)*shardLaneH
	legendTop := lanesBottom + axisH
	width := marginLeft + tl.plotW + marginRight
	height := legendTop + legendRowH*float64(1+len(owners)/6) + 8

	sw := &svgWriter{}
	sw.line(`<?xml version="1.0" encoding="UTF-8"?>`)
	sw.open(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif">`, f1(width), f1(height), f1(width), f1(height))
	sw.line(`<style>.t{font-size:14px;font-weight:bold}.s{font-size:11px;fill:#555}.l{font-size:11px}.b{font-size:10px;fill:#fff}</style>`)
	verdict := "all shard rules held"
	if !res.OK() {
		verdict = fmt.Sprintf("%d shard violation(s)", len(res.Violations))
	}
	sw.text(8, 18, "t", "start", fmt.Sprintf("Shard ownership: %d shards, %s", run.Shards, verdict), "")
	sw.text(8, 34, "s", "start", fmt.Sprintf("%s … %s; one lane per shard, bars by owner", start.UTC().Format(time.RFC3339), end.UTC().Format("15:04:05Z")), "")
	// Faults first, under the bars.
	for _, f := range run.Faults {
		x0 := tl.x(f.Start)
		x1 := x0 + 2
		if !f.End.IsZero() {
			x1 = math.Max(x1, tl.x(f.End))
		}
		sw.line(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.18"><title>%s</title></rect>`,
			f1(x0), f1(tl.lanesTop), f1(x1-x0), f1(lanesBottom-tl.lanesTop), faultColor(f.Kind), esc(f.String()))
	}
	for s := range run.Shards {
		y := tl.lanesTop + float64(s)*shardLaneH
		sw.text(marginLeft-8, y+17, "l", "end", fmt.Sprintf("shard %d", s), "")
		sw.line(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#eee"/>`, f1(marginLeft), f1(y+shardLaneH), f1(marginLeft+tl.plotW), f1(y+shardLaneH))
		for _, iv := range res.PerShard[s].Intervals {
			x0, x1 := tl.x(iv.Start), tl.x(iv.End)
			wdt := math.Max(1, x1-x0)
			sw.line(`<rect x="%s" y="%s" width="%s" height="18" fill="%s"><title>%s</title></rect>`, f1(x0), f1(y+4), f1(wdt),
				color[iv.Identity], esc(fmt.Sprintf("shard %d: %s, term %d, %s to %s (%s)", s, iv.Identity, iv.Term, relS(tl, iv.Start), relS(tl, iv.End), iv.EndedBy)))
			if float64(len(iv.Identity))*charW+6 < wdt {
				sw.text(x0+3, y+17, "b", "start", iv.Identity, "")
			}
		}
	}
	for _, v := range res.Violations {
		if v.At.IsZero() {
			continue
		}
		x := tl.x(v.At)
		sw.line(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#c62828" stroke-width="2"><title>%s</title></line>`,
			f1(x), f1(tl.lanesTop), f1(x), f1(lanesBottom), esc(v.String()))
	}
	drawAxis(sw, &timeline{start: tl.start, end: tl.end, pxPerSec: tl.pxPerSec, plotW: tl.plotW, lanesTop: lanesBottom})
	for i, id := range owners {
		x := marginLeft + float64(i%6)*150
		y := legendTop + float64(i/6)*legendRowH
		sw.line(`<rect x="%s" y="%s" width="12" height="12" fill="%s"/>`, f1(x), f1(y), color[id])
		sw.text(x+16, y+10, "l", "start", id, "")
	}
	sw.close("svg")
	return sw.b.Bytes()
}

// ownersOf lists every identity that owned a shard, sorted.
func ownersOf(res checker.ShardResult) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range res.PerShard {
		for _, iv := range r.Intervals {
			if !seen[iv.Identity] {
				seen[iv.Identity] = true
				out = append(out, iv.Identity)
			}
		}
	}
	slices.Sort(out)
	return out
}
