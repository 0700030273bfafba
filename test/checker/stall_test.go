package checker

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// stalls is a CPU probe record with one late wake per [due, woke] pair
// (seconds after t0).
func stalls(pairs ...[2]float64) *Sched {
	s := &Sched{Tick: 10 * time.Millisecond, Floor: time.Millisecond, Wakes: 1000}
	for _, p := range pairs {
		s.Late = append(s.Late, Wake{Due: at(p[0]), Woke: at(p[1])})
	}
	return s
}

func TestSched_StallInSumsTheLateWakesClippedToTheWindow(t *testing.T) {
	s := stalls([2]float64{1, 1.2}, [2]float64{2, 2.05}, [2]float64{3, 4})
	for _, tc := range []struct {
		from, to float64
		want     time.Duration
	}{
		{0, 10, 1250 * time.Millisecond},
		{1.1, 2.02, 120 * time.Millisecond}, // 100 ms of the first, 20 ms of the second
		{3.5, 3.6, 100 * time.Millisecond},
		{5, 6, 0},
		{2, 1, 0}, // an empty window
	} {
		if got := s.StallIn(at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("StallIn(%g, %g) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	// Storage's slow answers count with the CPU's late wakes, overlaps once.
	both := stalls([2]float64{1, 1.2})
	both.Storage = []Wake{{Due: at(1.1), Woke: at(1.5)}}
	if got := both.StallIn(at(0), at(10)); got != 500*time.Millisecond {
		t.Errorf("CPU 1–1.2 s and storage 1.1–1.5 s: StallIn = %v, want 500ms", got)
	}
	var none *Sched
	if got := none.StallIn(at(0), at(10)); got != 0 {
		t.Errorf("no probe: StallIn = %v, want 0", got)
	}
	if m := s.Max(); m.Late() != time.Second {
		t.Errorf("Max = %v, want the 1 s wake", m.Late())
	}
}

// The freeze rule's kill after a thaw: the case a loaded CI machine showed
// (reaped 1.066 s after the thaw, allowed 1 s). A miss the probe's stall in
// its window explains is inconclusive; a larger one, or one on a machine
// that did not stall, is a violation.
func TestCheckCommands_FreezeRuleAddsTheMeasuredStall(t *testing.T) {
	events := hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(26.066, "a", 10, 100, "leadership_ended")))
	freeze := []Fault{{Kind: FaultFreeze, Target: "a", Start: at(3), End: at(25)}}
	for _, tc := range []struct {
		name    string
		sched   *Sched
		exited  float64
		outcome string
		msg     string
	}{
		{"no probe: as designed", nil, 26.066, VerdictFail, "still ran 1.066s after (allowed 1s)"},
		{"a quiet machine: a violation", stalls([2]float64{25.3, 25.302}), 26.066, VerdictFail, "still ran 1.066s after (allowed 1s)"},
		{"a stall smaller than the miss: a violation naming it", stalls([2]float64{25.3, 25.33}), 26.066, VerdictFail, "beyond the 30ms the machine stalled"},
		{"the stall explains the miss: inconclusive", stalls([2]float64{25.3, 25.5}), 26.066, VerdictInconclusive, "within the 200ms the machine stalled"},
		{"a stall outside the window explains nothing", stalls([2]float64{10, 12}), 26.066, VerdictFail, "still ran 1.066s after"},
		{"2 s late with a 200 ms stall: a violation", stalls([2]float64{25.3, 25.5}), 27, VerdictFail, "beyond the 200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := hist(one(started(1, "a", 10, 100)), one(started(18, "b", 11, 200)), one(exited(tc.exited, "a", 10, 100, "leadership_ended")))
			if tc.exited == 26.066 {
				evs = events
			}
			res := checkCommands(t, CommandRun{Run: Run{Events: evs, Faults: freeze, Start: t0, End: at(30), Sched: tc.sched}})
			if got := res.Outcome(); got != tc.outcome {
				t.Fatalf("verdict %s, want %s: %v", got, tc.outcome, res.Err())
			}
			all := append(append([]Violation(nil), res.Violations...), res.Stalled...)
			if len(all) != 1 || all[0].Invariant != InvCmdFreeze || !strings.Contains(all[0].Message, tc.msg) {
				t.Fatalf("want one freeze finding mentioning %q; got violations %v, stalled %v", tc.msg, res.Violations, res.Stalled)
			}
			if tc.outcome == VerdictInconclusive && (!errors.Is(res.Err(), ErrInconclusive) || res.OK() || res.MaxStall() != 200*time.Millisecond) {
				t.Errorf("inconclusive: Err %v, OK %v, MaxStall %v; want ErrInconclusive, not OK, 200ms", res.Err(), res.OK(), res.MaxStall())
			}
		})
	}
}

// L1 after a crash: w1's last renew at 4 s gives a deadline of 21.1 s.
func TestCheck_L1AddsTheMeasuredStall(t *testing.T) {
	w1 := leads("w1", 1, 0, 4, -1)
	crash := []Fault{{Kind: FaultCrash, Target: "w1", Start: at(6)}}
	for _, tc := range []struct {
		name    string
		next    float64
		sched   *Sched
		outcome string
	}{
		{"in time", 21, stalls([2]float64{10, 10.5}), VerdictPass},
		{"150 ms late on a quiet machine", 21.25, stalls([2]float64{10, 10.002}), VerdictFail},
		{"150 ms late, 300 ms stalled in the window", 21.25, stalls([2]float64{20, 20.3}), VerdictInconclusive},
		{"150 ms late, the stall before the last renew", 21.25, stalls([2]float64{1, 1.3}), VerdictFail},
		{"3 s late, 300 ms stalled", 24.1, stalls([2]float64{20, 20.3}), VerdictFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := Run{Events: hist(w1, leads("w2", 2, tc.next, tc.next+4, -1)), Faults: crash, Start: t0, End: at(30), Sched: tc.sched}
			res, err := Check(run, testParams())
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Outcome(); got != tc.outcome {
				t.Fatalf("verdict %s, want %s: %v", got, tc.outcome, res.Err())
			}
			if len(res.Failovers) != 1 {
				t.Fatalf("failovers %+v, want one", res.Failovers)
			}
			if fo := res.Failovers[0]; tc.outcome == VerdictInconclusive && (fo.Stall != 300*time.Millisecond || len(res.Stalled) != 1 || res.Stalled[0].Invariant != InvL1) {
				t.Errorf("stalled failover %+v, stalled %v: want its stall 300ms and one L1 entry", fo, res.Stalled)
			}
		})
	}
}

// Safety never reads the probe: an overlap, a term that goes back and two
// commands at once fail however long the machine stalled.
func TestCheck_SafetyIsNeverExcusedByAStall(t *testing.T) {
	everything := stalls([2]float64{0, 60})
	s1 := Run{Events: hist(leads("w1", 1, 0, 4, -1), leads("w2", 2, 8, 12, -1)), Start: t0, End: at(20), Sched: everything}
	s2 := Run{Events: hist(leads("w1", 2, 0, 4, 5), leads("w2", 1, 6, 8, 9)), Start: t0, End: at(20), Sched: everything}
	for name, run := range map[string]Run{"S1": s1, "S2": s2} {
		res, err := Check(run, testParams())
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome() != VerdictFail || len(res.Stalled) != 0 {
			t.Errorf("%s under a 60 s stall: verdict %s, stalled %v; want fail with nothing excused", name, res.Outcome(), res.Stalled)
		}
		wantViolations(t, res.Verdict, name)
	}
	cmds := CommandRun{Run: Run{Events: hist(one(started(1, "a", 10, 100)), one(exited(7, "a", 10, 100, "leadership_ended")), one(started(6, "b", 11, 200))), Start: t0, End: at(10), Sched: everything}}
	res := checkCommands(t, cmds)
	if res.Outcome() != VerdictFail || len(res.Stalled) != 0 {
		t.Errorf("S1-commands under a 60 s stall: verdict %s, stalled %v; want fail", res.Outcome(), res.Stalled)
	}
	wantViolations(t, res.Verdict, InvCmdS1)
}

// The other timing bounds of run mode: the guard's kill after its
// supervisor's SIGKILL (GuardKillWindow) and L1-commands.
func TestCheckCommands_KillWindowAndL1AddTheMeasuredStall(t *testing.T) {
	crash := []Fault{{Kind: FaultCrash, Target: "a", Start: at(5)}}
	report := []Activity{{Holder: "a", Term: 10, PID: 101, At: at(6.3), What: "alive"}} // 1.3 s after the SIGKILL
	kill := func(s *Sched) CommandResult {
		return checkCommands(t, CommandRun{Run: Run{Events: hist(one(started(1, "a", 10, 100)), one(started(30, "b", 11, 200))), Faults: crash, Start: t0, End: at(32), Sched: s}, Activity: report})
	}
	if res := kill(nil); res.Outcome() != VerdictFail {
		t.Errorf("a report 1.3 s after the kill, no probe: verdict %s, want fail", res.Outcome())
	}
	if res := kill(stalls([2]float64{5.5, 5.9})); res.Outcome() != VerdictInconclusive || len(res.Stalled) != 1 || res.Lifetimes[0].End != at(6.3) {
		t.Errorf("a report 1.3 s after the kill, 400 ms stalled: verdict %s, stalled %v, lifetime %+v; want inconclusive, the lifetime to its report", res.Outcome(), res.Stalled, res.Lifetimes[0])
	}

	// L1-commands: exited on its own at 5, bound 2.1 s, the next at 7.2.
	l1 := func(s *Sched) CommandResult {
		evs := hist(one(started(1, "a", 10, 100)), one(exited(5, "a", 10, 100, "exited")), one(started(7.2, "b", 11, 200)))
		return checkCommands(t, CommandRun{Run: Run{Events: evs, Start: t0, End: at(9), Sched: s}})
	}
	if res := l1(stalls([2]float64{5, 5.01})); res.Outcome() != VerdictFail {
		t.Errorf("L1-commands 100 ms late, 10 ms stalled: verdict %s, want fail", res.Outcome())
	}
	if res := l1(stalls([2]float64{6, 6.15})); res.Outcome() != VerdictInconclusive || res.Failovers[0].Stall != 150*time.Millisecond {
		t.Errorf("L1-commands 100 ms late, 150 ms stalled: verdict %s, failover %+v; want inconclusive", res.Outcome(), res.Failovers[0])
	}
}

// L2: a worker idle for the whole sample window is inconclusive only when
// the machine stalled long enough to hide both of its requests.
func TestCheck_L2AddsTheMeasuredStall(t *testing.T) {
	// Defaults: renew 2 s, poll 1 s: window 5 s, a stall of 3 s hides both.
	run := func(s *Sched) Result {
		r := Run{Events: hist(leads("w1", 1, 0, 18, -1), one(ev(1, "w2", EventObservedLeader, 1, none))), Start: t0, End: at(20), Sched: s,
			Workers: []Worker{{Identity: "w1", Alive: true, Contending: true}, {Identity: "w2", Alive: true}}}
		res, err := Check(r, testParams())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(stalls([2]float64{16, 17})); res.Outcome() != VerdictFail {
		t.Errorf("idle with 1 s stalled: verdict %s, want fail", res.Outcome())
	}
	if res := run(stalls([2]float64{15.5, 19})); res.Outcome() != VerdictInconclusive || len(res.Stalled) != 1 || res.Stalled[0].Invariant != InvL2 {
		t.Errorf("idle with 3.5 s stalled: verdict %s, stalled %v; want inconclusive L2", res.Outcome(), res.Stalled)
	}
}
