package cluster

import (
	"strings"
	"testing"
	"time"
)

// A running probe wakes about once a tick and records only wakes at least
// Floor late.
func TestSchedProbe_MeasuresItsWakes(t *testing.T) {
	p := StartSchedProbe(SchedProbeConfig{})
	deadline := time.Now().Add(10 * time.Second)
	for p.Record().Wakes < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the probe woke %d times in 10 s; want 20 (a 10 ms tick)", p.Record().Wakes)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Stop()
	p.Stop() // twice is safe
	r := p.Record()
	for _, w := range r.Late {
		if w.Late() < r.Floor || w.Woke.Before(r.Since) {
			t.Errorf("recorded wake %+v: below the floor %v or before the start", w, r.Floor)
		}
	}
	if !strings.HasPrefix(r.String(), "cpu probe: ") || !strings.Contains(r.String(), "wakes of 10ms") {
		t.Errorf("summary %q", r.String())
	}
	t.Logf("%s", r)
}

// The ring keeps the latest Keep late wakes in order and counts the rest;
// the maximum, total and stalls cover every wake.
func TestSchedProbe_KeepsTheLatestLateWakes(t *testing.T) {
	p := &SchedProbe{cfg: SchedProbeConfig{Tick: 10 * time.Millisecond, Floor: time.Millisecond, StallThreshold: 100 * time.Millisecond, Keep: 3}}
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for i, late := range []time.Duration{0, 500 * time.Microsecond, 2 * time.Millisecond, 300 * time.Millisecond, 5 * time.Millisecond, 150 * time.Millisecond, 20 * time.Millisecond} {
		due := t0.Add(time.Duration(i) * time.Second)
		p.add(due, due.Add(late))
	}
	r := p.Record()
	if r.Wakes != 7 || r.Dropped != 2 || len(r.Late) != 3 {
		t.Fatalf("wakes %d, dropped %d, kept %d; want 7, 2, 3", r.Wakes, r.Dropped, len(r.Late))
	}
	var kept []time.Duration
	for _, w := range r.Late {
		kept = append(kept, w.Late())
	}
	if kept[0] != 5*time.Millisecond || kept[1] != 150*time.Millisecond || kept[2] != 20*time.Millisecond {
		t.Errorf("kept %v, want the latest three in order [5ms 150ms 20ms]", kept)
	}
	if r.Max.Late() != 300*time.Millisecond || r.Total != 477*time.Millisecond || r.Stalls != 1 {
		t.Errorf("max %v, total %v, stalls among kept %d; want 300ms, 477ms, 1", r.Max.Late(), r.Total, r.Stalls)
	}
}
