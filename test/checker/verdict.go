package checker

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Outcomes of Verdict.Outcome, as the report's JSON summary writes them.
const (
	VerdictPass = "pass" // no violation, and the evidence is complete
	VerdictFail = "fail" // at least one violation
	// VerdictInconclusive: no violation was found, but the evidence is
	// known to be incomplete (a sink dropped records), or a timing bound was
	// missed by no more than the machine stalled (Verdict.Stalled), so the
	// run proves nothing. Never a pass.
	VerdictInconclusive = "inconclusive"
)

// ErrViolations is wrapped by Verdict.Err when a rule was broken.
var ErrViolations = errors.New("checker: invariants violated")

// ErrInconclusive is wrapped by Verdict.Err for a verdict without
// violations whose evidence is incomplete or whose timing misses the
// measured stall explains.
var ErrInconclusive = errors.New("checker: inconclusive")

// Verdict is what one checker concluded about a run, or several composed
// (Compose): valid (pass), invalid (fail) or inconclusive, with the
// evidence behind it. Result, CommandResult and ShardResult each carry one.
type Verdict struct {
	// Violations are the broken rules, each quoting its evidence, in the
	// checker's order.
	Violations []Violation
	// Inconclusive says why the evidence is known to be incomplete
	// (records a sink dropped); a verdict with reasons here is never a
	// pass.
	Inconclusive []string
	// Stalled are timing bounds missed by no more than the machine stalled
	// in their window (stall.go): each would be a violation on a machine
	// that ran the system when it was due; here it proves nothing either
	// way. A verdict with any is never a pass.
	Stalled []Violation
	// Duplicates is how many repeated records (a re-flushed history
	// segment) were set aside before judging.
	Duplicates int
}

// Compose merges verdicts the way jepsen's checker compose does: invalid
// beats inconclusive beats valid. Violations and reasons are kept in
// argument order; duplicate counts add up.
func Compose(vs ...Verdict) Verdict {
	var out Verdict
	for _, v := range vs {
		out.Violations = append(out.Violations, v.Violations...)
		out.Inconclusive = append(out.Inconclusive, v.Inconclusive...)
		out.Stalled = append(out.Stalled, v.Stalled...)
		out.Duplicates += v.Duplicates
	}
	return out
}

// Outcome is VerdictFail with any violation, else VerdictInconclusive with
// any reason to doubt the evidence or any stall-explained miss, else
// VerdictPass.
func (v Verdict) Outcome() string {
	switch {
	case len(v.Violations) > 0:
		return VerdictFail
	case len(v.Inconclusive) > 0 || len(v.Stalled) > 0:
		return VerdictInconclusive
	}
	return VerdictPass
}

// OK reports whether the run passed: no violation and complete evidence.
func (v Verdict) OK() bool { return v.Outcome() == VerdictPass }

// Err returns nil for a run that passed; otherwise an error listing every
// violation (wrapping ErrViolations), or, with none, the reasons the run is
// inconclusive (wrapping ErrInconclusive).
func (v Verdict) Err() error {
	var b strings.Builder
	sep := ""
	if len(v.Violations) > 0 {
		fmt.Fprintf(&b, "%d violation(s):", len(v.Violations))
		for _, x := range v.Violations {
			b.WriteString("\n- ")
			b.WriteString(x.String())
		}
		sep = "\nand "
	}
	if len(v.Inconclusive) > 0 {
		b.WriteString(sep + "the history is incomplete, ")
		b.WriteString(inconclusiveText(v.Inconclusive))
		sep = "\nand "
	}
	if len(v.Stalled) > 0 {
		var lines []string
		for _, s := range v.Stalled {
			lines = append(lines, s.String())
		}
		b.WriteString(sep + "timing bounds were missed within the machine's measured stall, ")
		b.WriteString(inconclusiveText(lines))
	}
	switch v.Outcome() {
	case VerdictFail:
		return fmt.Errorf("%w: %s", ErrViolations, b.String())
	case VerdictInconclusive:
		return fmt.Errorf("%w: %s", ErrInconclusive, b.String())
	}
	return nil
}

// MaxStall is the largest stall among the stall-explained misses (zero:
// none).
func (v Verdict) MaxStall() time.Duration {
	var m time.Duration
	for _, s := range v.Stalled {
		m = max(m, s.Stall)
	}
	return m
}

// inconclusiveText lists the reasons a run is inconclusive, for Err.
func inconclusiveText(reasons []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d reason(s):", len(reasons))
	for _, r := range reasons {
		b.WriteString("\n- ")
		b.WriteString(r)
	}
	return b.String()
}

// checkDropped makes the run inconclusive for every history_dropped record:
// the records lost before it may have held a started_leading that overlaps
// another leader, and nothing can show they did not.
func (c *checker) checkDropped() {
	for _, e := range c.run.Events {
		if e.Event != EventHistoryDropped {
			continue
		}
		n := "an unknown number of"
		if e.Dropped > 0 {
			n = fmt.Sprint(e.Dropped)
		}
		c.inconclusive = append(c.inconclusive, fmt.Sprintf("worker %s's history lost %s record(s) before %s (%s)", e.Identity, n, c.rel(e.T), e))
	}
}

// dedupe drops events that are the same record written twice: same
// identity, process (t − mono_ns), event, term and time. A blob history
// segment re-flushed after a lost append answer repeats its records; read
// as two started_leading of one term they would be a false S2. Events of
// different processes or times are never merged. It returns the kept events
// (order preserved) and how many were dropped.
func dedupe(evs []Event) ([]Event, int) {
	type key struct {
		id, event string
		term      int64
		t, proc   time.Time
	}
	seen := make(map[key]bool, len(evs))
	out := evs[:0:0]
	for _, e := range evs {
		k := key{e.Identity, e.Event, e.Term, e.T, e.T.Add(-time.Duration(e.MonoNS))}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out, len(evs) - len(out)
}
