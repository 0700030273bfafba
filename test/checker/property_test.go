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
			t.Fatalf("seed %d: sequential leaderships flagged: %v", seed, Verdict{Violations: v}.Err())
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
			t.Fatalf("sequential leaderships flagged: %v", Verdict{Violations: v}.Err())
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

// ledgerFor writes one ledger entry at the start of every leadership, seq
// from 1: a clean ledger for a run of sequential leaderships.
func ledgerFor(evs []Event) []LedgerEntry {
	var out []LedgerEntry
	for _, e := range evs {
		if e.Event == EventStartedLeading {
			out = append(out, LedgerEntry{Seq: int64(len(out) + 1), Term: e.Term, Holder: e.Identity, At: e.T})
		}
	}
	return out
}

// workersOf lists every identity in the history as a started, live worker.
func workersOf(evs []Event) []Worker {
	seen := map[string]bool{}
	var out []Worker
	for _, e := range evs {
		if !seen[e.Identity] {
			seen[e.Identity] = true
			out = append(out, Worker{Identity: e.Identity, Alive: true, Contending: true})
		}
	}
	return out
}

func startsOf(evs []Event) []int {
	var out []int
	for i, e := range evs {
		if e.Event == EventStartedLeading {
			out = append(out, i)
		}
	}
	return out
}

// defect turns a clean run into one with a single defect; it returns false
// when the run is too small for it. want checks the checker's result.
type defect struct {
	name  string
	apply func(r *rand.Rand, run *Run) (want func(Result) string, ok bool)
}

// violation returns "" when res has a violation of inv mentioning frag.
func violation(res Result, inv, frag string) string {
	for _, v := range res.Violations {
		if v.Invariant == inv && strings.Contains(v.Message, frag) {
			return ""
		}
	}
	return fmt.Sprintf("want a %s violation mentioning %q, got %v (verdict %s)", inv, frag, res.Err(), res.Outcome())
}

var defects = []defect{
	{"same term for two leaderships (S2)", func(r *rand.Rand, run *Run) (func(Result) string, bool) {
		st := startsOf(run.Events)
		if len(st) < 2 {
			return nil, false
		}
		i := r.IntN(len(st) - 1)
		j := i + 1 + r.IntN(len(st)-i-1)
		from, to := run.Events[st[j]].Term, run.Events[st[i]].Term
		for k := range run.Events {
			if run.Events[k].Term == from {
				run.Events[k].Term = to
			}
		}
		run.Ledger = ledgerFor(run.Events)
		return func(res Result) string { return violation(res, InvS2, fmt.Sprintf("term %d was started twice", to)) }, true
	}},
	{"dropped records (inconclusive)", func(r *rand.Rand, run *Run) (func(Result) string, bool) {
		e := run.Events[r.IntN(len(run.Events))]
		e.Event, e.Term, e.ValidUntil, e.Dropped = EventHistoryDropped, 0, time.Time{}, 1+int64(r.IntN(100))
		run.Events = append(run.Events, e)
		return func(res Result) string {
			if res.Outcome() != VerdictInconclusive || res.OK() || res.Err() == nil {
				return fmt.Sprintf("verdict %s (OK %v, err %v), want inconclusive", res.Outcome(), res.OK(), res.Err())
			}
			return ""
		}, true
	}},
	{"a started worker without history", func(r *rand.Rand, run *Run) (func(Result) string, bool) {
		// Either a worker that never wrote, or one whose file was lost:
		// drop every event of one identity that led (the rest stays sequential).
		victim := "silent"
		if r.IntN(2) == 0 {
			victim = run.Workers[r.IntN(len(run.Workers))].Identity
			kept := run.Events[:0:0]
			for _, e := range run.Events {
				if e.Identity != victim {
					kept = append(kept, e)
				}
			}
			run.Events = kept
			run.Ledger = ledgerFor(kept)
		} else {
			run.Workers = append(run.Workers, Worker{Identity: victim, Alive: true, Contending: true})
		}
		if len(run.Events) == 0 {
			return nil, false
		}
		return func(res Result) string {
			return violation(res, InvEvidence, "worker "+victim+" was started but left no history")
		}, true
	}},
	{"ledger starting at seq 2", func(r *rand.Rand, run *Run) (func(Result) string, bool) {
		if len(run.Ledger) < 2 {
			return nil, false
		}
		run.Ledger = run.Ledger[1:]
		return func(res Result) string { return violation(res, InvS2, "the first entry has seq 2, want 1") }, true
	}},
	{"duplicated started_leading (re-flushed segment): no false S2", func(r *rand.Rand, run *Run) (func(Result) string, bool) {
		st := startsOf(run.Events)
		dup := run.Events[st[r.IntN(len(st))]]
		dup.Source = "reflushed"
		run.Events = append(run.Events, dup)
		return func(res Result) string {
			if !res.OK() || res.Duplicates != 1 {
				return fmt.Sprintf("a repeated record was judged: duplicates %d, err %v", res.Duplicates, res.Err())
			}
			return ""
		}, true
	}},
}

// TestCheck_PropertyDefectsReported: a clean generated run passes (with its
// ledger and workers), and each defect planted in it is reported as its rule
// says — a violation, or the inconclusive verdict — for every seed.
func TestCheck_PropertyDefectsReported(t *testing.T) {
	applied := map[string]int{}
	for seed := uint64(0); seed < 300; seed++ {
		clean, _, _ := randomRun(seed, -1)
		clean.Ledger = ledgerFor(clean.Events)
		clean.Workers = workersOf(clean.Events)
		if res := check(t, clean, testParams()); !res.OK() {
			t.Fatalf("seed %d: the clean run does not pass: %v", seed, res.Err())
		}
		for _, d := range defects {
			r := rand.New(rand.NewPCG(seed, 7))
			run := clean
			run.Events = append([]Event(nil), clean.Events...)
			run.Ledger = append([]LedgerEntry(nil), clean.Ledger...)
			run.Workers = append([]Worker(nil), clean.Workers...)
			want, ok := d.apply(r, &run)
			if !ok {
				continue
			}
			applied[d.name]++
			if msg := want(check(t, run, testParams())); msg != "" {
				t.Fatalf("seed %d, %s: %s", seed, d.name, msg)
			}
		}
	}
	for _, d := range defects {
		if applied[d.name] < 100 {
			t.Errorf("%s applied to only %d of 300 seeds: the generator no longer exercises it", d.name, applied[d.name])
		}
	}
	t.Logf("defects planted and reported: %v", applied)
}

// TestCheck_PropertyCrashDoesNotHideOverlap: a crash fault stamped before
// the overlapping leader started (as on Azure, where the stamp precedes a
// multi-second stop) does not cap a belief that logged its valid_until, so
// the overlap is still reported with its exact size.
func TestCheck_PropertyCrashDoesNotHideOverlap(t *testing.T) {
	flagged := 0
	for seed := uint64(0); seed < 300; seed++ {
		run, want, terms := randomRun(seed, 1+int(seed%3))
		if want <= 0 {
			continue
		}
		var prev, next Event
		for _, e := range run.Events {
			if e.Event == EventStartedLeading && e.Term == terms[0] {
				prev = e
			}
			if e.Event == EventStartedLeading && e.Term == terms[1] {
				next = e
			}
		}
		// The crash lands between the two starts: a cap at it would end the
		// earlier belief before the later one began.
		kill := prev.T.Add(next.T.Sub(prev.T) / 2)
		run.Faults = append(run.Faults, Fault{Kind: FaultCrash, Target: prev.Identity, Start: kill})
		res := check(t, run, testParams())
		if msg := violation(res, InvS1, fmt.Sprintf("terms %d and %d overlap by %v", terms[0], terms[1], want)); msg != "" {
			t.Fatalf("seed %d: %s", seed, msg)
		}
		flagged++
	}
	if flagged < 150 {
		t.Fatalf("only %d seeds planted the overlap", flagged)
	}
}

// FuzzCheck_DefectsReported plants each defect in runs from fuzzed seeds.
func FuzzCheck_DefectsReported(f *testing.F) {
	for _, s := range []uint64{0, 3, 99, 1 << 33} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, seed uint64, which uint8) {
		run, _, _ := randomRun(seed, -1)
		run.Ledger = ledgerFor(run.Events)
		run.Workers = workersOf(run.Events)
		d := defects[int(which)%len(defects)]
		want, ok := d.apply(rand.New(rand.NewPCG(seed, uint64(which))), &run)
		if !ok {
			return
		}
		res, err := Check(run, testParams())
		if err != nil {
			t.Fatal(err)
		}
		if msg := want(res); msg != "" {
			t.Fatalf("%s: %s", d.name, msg)
		}
	})
}
