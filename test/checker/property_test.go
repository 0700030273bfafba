package checker

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// randomRun builds a run of well-behaved leaderships one after the other
// (each stepping down, pausing past its deadline, or being killed) with
// random gaps and strictly increasing terms. With overlap ≥ 1 the leadership
// at that index starts before the previous belief ended; want is then the
// overlap the checker must report.
func randomRun(seed uint64, overlap int) (run Run, want time.Duration, terms [2]int64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	n := 2 + r.IntN(7)
	var (
		now     time.Duration // end of the previous belief
		prevSt  time.Duration
		prevEnd time.Duration
		term    int64
		events  []Event
		faults  []Fault
	)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("w%d", r.IntN(3)+1)
		if i == overlap {
			id = "overlapper" // a kill of the previous worker must not cap this one
		}
		term += 1 + int64(r.IntN(3))
		start := now + ms(1+r.IntN(3000))
		if i == overlap && prevEnd > prevSt {
			start = prevEnd - ms(1+r.IntN(int((prevEnd-prevSt)/time.Millisecond)))
			if start <= prevSt {
				start = prevSt + time.Millisecond
			}
		}
		e := func(d time.Duration, kind string, vu time.Duration) Event {
			return Event{T: t0.Add(d), Identity: id, Event: kind, Term: term, ValidUntil: t0.Add(vu)}
		}
		events = append(events, e(start, EventStartedLeading, start+10*time.Second))
		last := start
		for k := r.IntN(6); k > 0; k-- {
			last += ms(1500 + r.IntN(1000))
			events = append(events, e(last, EventRenewed, last+10*time.Second))
		}
		vu := last + 10*time.Second
		end := vu
		switch r.IntN(3) {
		case 0: // steps down
			stop := last + ms(r.IntN(12000))
			events = append(events, e(stop, EventStoppedLeading, vu))
			end = min(stop, vu)
		case 1: // paused (or partitioned) past its deadline: logs nothing more
		case 2: // killed: its own valid_until still bounds the belief
			k := last + ms(r.IntN(10000)) // while it still believes: the process dies
			faults = append(faults, Fault{Kind: FaultCrash, Target: id, Start: t0.Add(k)})
		}
		if i == overlap {
			want = min(end, prevEnd) - start
			terms[1] = term
		}
		if i == overlap-1 {
			terms[0] = term
		}
		prevSt, prevEnd = start, end
		now = max(now, end)
	}
	SortEvents(events)
	return Run{Events: events, Faults: faults, Start: t0, End: t0.Add(now + time.Second)}, want, terms
}

func safetyOnly(res Result) []Violation {
	var out []Violation
	for _, v := range res.Violations {
		if v.Invariant == InvS1 || v.Invariant == InvS2 || v.Invariant == InvBreak {
			out = append(out, v)
		}
	}
	return out
}

// TestCheck_PropertyNoFalseAlarms: sequential leaderships are never flagged,
// and one forced overlap is always flagged with its exact size.
func TestCheck_PropertyNoFalseAlarms(t *testing.T) {
	flagged := 0
	for seed := uint64(0); seed < 500; seed++ {
		run, _, _ := randomRun(seed, -1)
		res := check(t, run, testParams())
		if v := safetyOnly(res); len(v) > 0 {
			t.Fatalf("seed %d: sequential leaderships flagged: %v", seed, Result{Violations: v}.Err())
		}
		run, want, terms := randomRun(seed, 1+int(seed%3))
		if want <= 0 {
			continue // the overlap index fell past the run, or an empty belief
		}
		res = check(t, run, testParams())
		frag := fmt.Sprintf("terms %d and %d overlap by %v", terms[0], terms[1], want)
		found := false
		for _, v := range safetyOnly(res) {
			found = found || (v.Invariant == InvS1 && strings.Contains(v.Message, frag))
		}
		if !found {
			t.Fatalf("seed %d: expected S1 %q, got %v", seed, frag, res.Err())
		}
		flagged++
	}
	if flagged < 250 {
		t.Fatalf("only %d of 500 seeds produced an overlap: the generator no longer exercises S1", flagged)
	}
	t.Logf("%d forced overlaps all reported", flagged)
}

// FuzzCheck_SequentialNeverFlagged runs the same property on fuzzed seeds.
func FuzzCheck_SequentialNeverFlagged(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		run, _, _ := randomRun(seed, -1)
		res, err := Check(run, testParams())
		if err != nil {
			t.Fatal(err)
		}
		if v := safetyOnly(res); len(v) > 0 {
			t.Fatalf("sequential leaderships flagged: %v", Result{Violations: v}.Err())
		}
	})
}

// FuzzParseHistory: any input either parses into events with the required
// fields or fails with ErrMalformed naming a line; never a panic.
func FuzzParseHistory(f *testing.F) {
	f.Add([]byte(`{"t":"2026-11-21T07:00:00Z","identity":"w1","event":"renewed","term":1}` + "\n"))
	f.Add([]byte("{}\n"))
	f.Add([]byte("\n\n{\"t\":\"2026-11-21T07:00:00Z\""))
	f.Fuzz(func(t *testing.T, in []byte) {
		evs, err := ParseHistory(bytes.NewReader(in), "fuzz")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz:") {
				t.Fatalf("error does not name the line: %v", err)
			}
			return
		}
		for _, e := range evs {
			if e.T.IsZero() || e.Identity == "" || e.Event == "" {
				t.Fatalf("accepted an event without required fields: %+v", e)
			}
		}
		if _, err := Check(Run{Events: evs}, testParams()); err != nil {
			t.Fatal(err)
		}
	})
}
