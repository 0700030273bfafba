package checker

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// t0 is the synthetic run's start; every time in the tests is seconds after it.
var t0 = time.Date(2026, 11, 21, 7, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(math.Round(sec * float64(time.Second)))) }

// testParams are the defaults: L 15 s, D 10 s, renew 2 s, P 1 s, request
// timeout 2 s, ε 1 s, no skew. So a crash bound is 17.1 s from the last renew
// and a graceful bound 2.1 s from the release.
func testParams() Params { return DefaultParams() }

const none = -1.0 // no valid_until

// ev builds one event; vu < 0 means no valid_until.
func ev(sec float64, id, event string, term int64, vu float64) Event {
	e := Event{T: at(sec), Identity: id, Event: event, Term: term}
	if vu >= 0 {
		e.ValidUntil = at(vu)
	}
	e.Source = fmt.Sprintf("synthetic:%s@%gs", id, sec)
	return e
}

// leads is a well-behaved leadership: started at from, renewed every 2 s
// until lastRenew (inclusive), then stopped at stop (stop < 0: never stopped,
// e.g. still leading, crashed or paused). valid_until is send time + 10 s.
func leads(id string, term int64, from, lastRenew, stop float64) []Event {
	out := []Event{ev(from, id, EventStartedLeading, term, from+10)}
	vu := from + 10
	for t := from + 2; t <= lastRenew+1e-9; t += 2 {
		vu = t + 10
		out = append(out, ev(t, id, EventRenewed, term, vu))
	}
	if stop >= 0 {
		e := ev(stop, id, EventStoppedLeading, term, vu)
		e.Reason = "shutdown"
		out = append(out, e)
	}
	return out
}

func hist(parts ...[]Event) []Event {
	var out []Event
	for _, p := range parts {
		out = append(out, p...)
	}
	SortEvents(out)
	return out
}

func one(e Event) []Event { return []Event{e} }

func check(t *testing.T, run Run, p Params) Result {
	t.Helper()
	res, err := Check(run, p)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return res
}

// wantViolations asserts the run's violations are exactly the invariants in
// want (in any order, with multiplicity) and that each message contains its
// fragment when one is given as "INV:fragment".
func wantViolations(t *testing.T, res Verdict, want ...string) {
	t.Helper()
	got := map[string]int{}
	for _, v := range res.Violations {
		got[v.Invariant]++
	}
	exp := map[string]int{}
	for _, w := range want {
		inv, frag, _ := strings.Cut(w, ":")
		exp[inv]++
		if frag == "" {
			continue
		}
		found := false
		for _, v := range res.Violations {
			if v.Invariant == inv && strings.Contains(v.Message, frag) {
				found = true
			}
		}
		if !found {
			t.Errorf("expected a %s violation mentioning %q; got:\n%v", inv, frag, res.Err())
		}
	}
	for inv, n := range exp {
		if got[inv] != n {
			t.Errorf("expected %d %s violation(s), got %d:\n%v", n, inv, got[inv], res.Err())
		}
	}
	for inv, n := range got {
		if exp[inv] == 0 {
			t.Errorf("unexpected %d %s violation(s):\n%v", n, inv, res.Err())
		}
	}
}
