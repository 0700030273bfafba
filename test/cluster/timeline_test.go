package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/blobleader/blobleader/chaos"
)

func TestTimeline_OpenCloseAndInPlaceNewestFirst(t *testing.T) {
	var tl Timeline
	a, b, c := &chaos.Pause{}, &chaos.Partition{}, &chaos.Outage{}
	translated := &chaos.Outage{}
	now := time.Now()
	tl.Add(a, a, FaultRecord{Kind: "pause", Start: now})
	tl.Add(b, b, FaultRecord{Kind: "partition", Start: now.Add(time.Second)})
	tl.Add(c, translated, FaultRecord{Kind: "outage", Start: now.Add(2 * time.Second)})

	if got := tl.InPlace(); !slices.Equal(got, []chaos.Fault{c, b, a}) {
		t.Fatalf("InPlace = %v, want newest first (outage, partition, pause)", got)
	}
	// A fault is found as the scenario passed it and as the one that acts.
	for _, f := range []chaos.Fault{c, translated} {
		if acting, rec, ok := tl.Open(f); !ok || acting != translated || rec.Kind != "outage" {
			t.Fatalf("Open(%p) = %v, %+v, %v; want the translated outage", f, acting, rec, ok)
		}
	}
	tl.Close(b)
	if _, _, ok := tl.Open(b); ok {
		t.Fatal("a closed fault is still open")
	}
	if got := tl.InPlace(); !slices.Equal(got, []chaos.Fault{c, a}) {
		t.Fatalf("InPlace after closing the partition = %v", got)
	}
	recs := tl.Records()
	if len(recs) != 3 || recs[1].End.IsZero() || !recs[0].End.IsZero() || recs[0].Kind != "pause" {
		t.Fatalf("Records = %+v: want injection order, only the partition ended", recs)
	}
	tl.Close(b) // closing twice does nothing
	if recs2 := tl.Records(); !recs2[1].End.Equal(recs[1].End) {
		t.Fatal("a second Close moved the end of an already closed fault")
	}
}
