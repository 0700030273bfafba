package checker

import (
	"sort"
	"time"
)

// How a belief interval ended (Interval.EndedBy).
const (
	EndStopped    = "stopped_leading" // the worker stepped down
	EndValidUntil = "valid_until"     // its last logged deadline passed first
	EndCrash      = "crash"           // the harness killed it
	EndRunEnd     = "run end"         // unbounded: no stop, deadline or kill before the run ended
)

// Interval is one worker's belief that it leads one term.
type Interval struct {
	Identity string
	Term     int64
	Start    time.Time // the started_leading event's time
	End      time.Time // the earliest of stop, latest valid_until, kill (only without valid_until); run end if none
	EndedBy  string    // one of the End* values

	Started Event // the started_leading event
	Stopped Event // the first stopped_leading for this term; zero if none
	Valid   Event // the event with the latest valid_until for this term; zero if none

	valids []Event // events carrying a valid_until for this term, in time order
}

// validAt returns the latest valid_until logged for the interval at or
// before t (any time when t is zero), and the event that logged it.
func (iv Interval) validAt(t time.Time) (time.Time, Event, bool) {
	var vu time.Time
	var ev Event
	ok := false
	for _, e := range iv.valids {
		if !t.IsZero() && e.T.After(t) {
			continue
		}
		if !ok || e.ValidUntil.After(vu) {
			vu, ev, ok = e.ValidUntil, e, true
		}
	}
	return vu, ev, ok
}

// contains reports whether t falls in [Start, End].
func (iv Interval) contains(t time.Time) bool {
	return !t.Before(iv.Start) && !t.After(iv.End)
}

// intervals derives every (identity, term) belief interval from the
// history, in time order. A worker believes it leads term T from its
// started_leading until the earliest of its stopped_leading for T and the
// latest valid_until it logged for T. Only a belief without any valid_until
// (the --unsafe-no-step-down negative control) is also ended by a crash
// fault on it: the harness stamps a crash before the kill lands (on Azure,
// before an ARM stop of several seconds), so capping a belief the worker
// itself bounded could hide an overlap. A belief with no end at all lasts
// until the run ends. A paused worker needs no case of its own: its
// valid_until ends its belief at its deadline.
func intervals(events []Event, faults []Fault, runEnd time.Time) []Interval {
	ivs := beliefs(events)
	for i := range ivs {
		ivs[i].end(faults, runEnd)
	}
	sort.SliceStable(ivs, func(a, b int) bool { return ivs[a].Start.Before(ivs[b].Start) })
	return ivs
}

// beliefs starts an interval at every started_leading and gives it its
// first stopped_leading and every deadline (valid_until) logged for it.
func beliefs(events []Event) []Interval {
	var ivs []Interval
	latest := map[string]int{} // identity -> index of its most recent interval
	type key struct {
		id   string
		term int64
	}
	byKey := map[key]int{}
	find := func(e Event) (int, bool) {
		if e.Term != 0 {
			// 1. Prefer the worker's current term, should a term repeat.
			if i, ok := latest[e.Identity]; ok && ivs[i].Term == e.Term {
				return i, true
			}
			i, ok := byKey[key{e.Identity, e.Term}]
			return i, ok
		}
		// 2. An event without a term belongs to the worker's latest term.
		i, ok := latest[e.Identity]
		return i, ok
	}
	for _, e := range events {
		switch e.Event {
		case EventStartedLeading:
			ivs = append(ivs, Interval{Identity: e.Identity, Term: e.Term, Start: e.T, Started: e})
			i := len(ivs) - 1
			latest[e.Identity] = i
			if _, dup := byKey[key{e.Identity, e.Term}]; !dup {
				byKey[key{e.Identity, e.Term}] = i
			}
			if !e.ValidUntil.IsZero() {
				ivs[i].valids = append(ivs[i].valids, e)
			}
			continue
		case EventStoppedLeading:
			if i, ok := find(e); ok && ivs[i].Stopped.Event == "" && !e.T.Before(ivs[i].Start) {
				ivs[i].Stopped = e
			}
		}
		// 3. Any event of a leading term that carries a deadline (renewed,
		// stopped_leading, or a new kind) extends what the worker believed.
		if !e.ValidUntil.IsZero() {
			if i, ok := find(e); ok && !e.T.Before(ivs[i].Start) {
				ivs[i].valids = append(ivs[i].valids, e)
			}
		}
	}
	return ivs
}

// end sets End and EndedBy: the earliest of its stop, its latest deadline
// and — only without a deadline — a kill; the run's end when none; never
// before its start.
func (iv *Interval) end(faults []Fault, runEnd time.Time) {
	for _, v := range iv.valids {
		if iv.Valid.Event == "" || v.ValidUntil.After(iv.Valid.ValidUntil) {
			iv.Valid = v
		}
	}
	end, by := time.Time{}, EndRunEnd
	take := func(t time.Time, why string) {
		if end.IsZero() || t.Before(end) {
			end, by = t, why
		}
	}
	if iv.Stopped.Event != "" {
		take(iv.Stopped.T, EndStopped)
	}
	if iv.Valid.Event != "" {
		take(iv.Valid.ValidUntil, EndValidUntil)
	}
	// The kill caps only a belief without a logged deadline (the unsafe
	// control): a crash fault is stamped by the harness's clock before the
	// kill lands, so capping a belief at it could hide an overlap, while a
	// logged valid_until is the worker's own bound.
	if k, ok := killedAfter(faults, iv.Identity, iv.Start); ok && iv.Valid.Event == "" {
		take(k, EndCrash)
	}
	if end.IsZero() {
		end = runEnd
	}
	if end.Before(iv.Start) {
		// A deadline or kill before the start: the belief was empty.
		end = iv.Start
	}
	iv.End, iv.EndedBy = end, by
}

// killedAfter returns the first crash of id at or after t.
func killedAfter(faults []Fault, id string, t time.Time) (time.Time, bool) {
	var k time.Time
	found := false
	for _, f := range faults {
		if f.Kind != FaultCrash || !f.hits(id) || f.Start.Before(t) {
			continue
		}
		if !found || f.Start.Before(k) {
			k, found = f.Start, true
		}
	}
	return k, found
}
