package checker

import (
	"fmt"
	"strings"
	"time"
)

// Invariant names used in Violation.Invariant.
const (
	InvS1    = "S1"
	InvBreak = "break" // the forced-break rule
	InvS2    = "S2"
	InvL1    = "L1"
	InvL2    = "L2"
	// InvTakeover (takeover.go): a false takeover, or a leader before an
	// early takeover's break period passed.
)

// Violation is one broken promise. Message says what and quotes the offending
// history lines (file:line and the line as read); Evidence holds the same
// events for programs.
type Violation struct {
	Invariant string    `json:"invariant"`
	Message   string    `json:"message"`
	At        time.Time `json:"at,omitzero"`      // when it happened: overlap start, missed deadline, offending event
	Workers   []string  `json:"workers,omitzero"` // identities involved, for placing it on a timeline
	Evidence  []Event   `json:"-"`
	// Miss and Stall, for a timing bound (stall.go): how late the bounded
	// thing came, and how long the machine stalled in the bound's window.
	Miss  time.Duration `json:"miss,omitzero"`
	Stall time.Duration `json:"stall,omitzero"`
}

func (v Violation) String() string { return v.Invariant + ": " + v.Message }

// Failover is the measured recovery after one fault that hit the leader.
type Failover struct {
	Kind     string    `json:"kind"`     // the fault's kind
	Target   string    `json:"target"`   // the fault's target ("" or "*" for all)
	Injected time.Time `json:"injected"` // the fault's Start
	Leader   string    `json:"leader"`   // the leader the fault hit
	Term     int64     `json:"term"`     // its term

	// From is the moment the bound counts from: the crashed or paused
	// leader's last successful renew send (valid_until − D; the fault's
	// Start when it logged none), the `released` event after a graceful
	// stop, the break, or the end of a network/storage fault. Basis says
	// which.
	From  time.Time `json:"from"`
	Basis string    `json:"basis"`
	// To is when a leader existed again: the next started_leading after
	// the fault (by any worker: a stopped process logs nothing more, so one
	// with the same identity is a restart), or From itself when a belief
	// covers the end of a network/storage fault. Zero when no leader
	// appeared before the run ended.
	To        time.Time     `json:"to,omitzero"`
	NewLeader string        `json:"new_leader,omitzero"`
	NewTerm   int64         `json:"new_term,omitzero"`
	Duration  time.Duration `json:"duration"` // To − From (never negative); 0 when To is zero
	Bound     time.Duration `json:"bound"`    // the L1 bound from From
	// Deadline is From + Bound, stretched when other faults were active in
	// the window (a new leader cannot be asked to appear during an outage).
	Deadline time.Time `json:"deadline"`
	// Inconclusive says why no verdict was reached (run ended before the
	// deadline, or an overlapping fault never healed); empty otherwise.
	Inconclusive string `json:"inconclusive,omitzero"`
	// Stall is, for a failover past its deadline, how long the machine
	// stalled between From and To (Run.Sched); a miss no larger is in
	// Verdict.Stalled, not a violation.
	Stall time.Duration `json:"stall,omitzero"`
}

// Result is the election checker's verdict on one run, with what it
// measured: the belief intervals and the failovers.
type Result struct {
	Verdict              // violations in check order: S1, break, takeover, S2, L1, L2, keep, evidence
	Intervals []Interval // every belief interval, by start
	Failovers []Failover // one per fault that hit the leader, by fault start
}

// Check judges one election run against S1, the forced-break rule, early
// takeover, S2, L1, keep, L2 and the evidence the run must hold; each rule
// is one method below, its doc comment the rule (the package documentation
// lists them). The error is only for unusable Params; violations and the
// reasons a run is inconclusive are in the Result's Verdict.
func Check(run Run, p Params) (Result, error) {
	p, err := p.normalized()
	if err != nil {
		return Result{}, err
	}
	// 1. Work on a time-ordered copy without repeated records: callers may
	// pass events unsorted, and a re-flushed blob segment repeats lines.
	run.Events = append([]Event(nil), run.Events...)
	SortEvents(run.Events)
	var dups int
	run.Events, dups = dedupe(run.Events)
	start, end := run.Bounds()
	c := &checker{run: run, p: p, start: start, end: end}
	c.ivs = intervals(run.Events, run.Faults, end)
	c.checkBreaks()
	c.checkS1()
	c.checkTerms()
	c.checkTakeovers()
	c.checkLedger()
	c.checkFailovers()
	c.checkKept()
	c.checkContending()
	c.checkHistories()
	c.checkRequirements()
	c.checkDropped()
	res := Result{Verdict: Verdict{Inconclusive: c.inconclusive, Stalled: c.stalled, Duplicates: dups}, Intervals: c.ivs, Failovers: c.failovers}
	for _, inv := range []string{InvS1, InvBreak, InvTakeover, InvS2, InvL1, InvL2, InvKeep, InvEvidence} {
		for _, v := range c.violations {
			if v.Invariant == inv {
				res.Violations = append(res.Violations, v)
			}
		}
	}
	return res, nil
}

type pair struct{ a, b int } // interval indexes, a < b

type checker struct {
	run          Run
	p            Params
	start, end   time.Time
	ivs          []Interval
	exempt       map[pair]bool // S1 pairs judged by the forced-break rule
	violations   []Violation
	failovers    []Failover
	inconclusive []string
	stalled      []Violation // timing bounds missed within the measured stall (overrun)
}

// where places a violation in time and on workers' lanes.
type where struct {
	at      time.Time
	workers []string
}

func placed(t time.Time, workers ...string) where { return where{t, workers} }

func (c *checker) report(inv string, w where, evidence []Event, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	var quoted []string
	seen := map[string]bool{}
	var ev []Event
	for _, e := range evidence {
		if e.Event == "" {
			continue
		}
		s := e.String()
		if seen[s] {
			continue
		}
		seen[s] = true
		quoted = append(quoted, "\n    "+s)
		ev = append(ev, e)
	}
	if len(quoted) > 0 {
		msg += "; evidence:" + strings.Join(quoted, "")
	}
	c.violations = append(c.violations, Violation{Invariant: inv, Message: msg, At: w.at, Workers: w.workers, Evidence: ev})
}

// rel formats t as seconds from the run start, with the wall time.
func (c *checker) rel(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("+%.3fs (%s)", t.Sub(c.start).Seconds(), t.UTC().Format("15:04:05.000000"))
}

func (c *checker) describe(iv Interval) string {
	return fmt.Sprintf("%s led term %d from %s to %s [ended by %s]", iv.Identity, iv.Term, c.rel(iv.Start), c.rel(iv.End), iv.EndedBy)
}

// endEvidence returns the events that justify an interval's end.
func endEvidence(iv Interval) []Event {
	switch iv.EndedBy {
	case EndStopped:
		return []Event{iv.Stopped}
	case EndValidUntil:
		return []Event{iv.Valid}
	}
	return nil
}
