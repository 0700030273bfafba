package checker

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Verdicts of Result.Verdict.
const (
	VerdictPass = "pass" // no violation, and the history is complete
	VerdictFail = "fail" // at least one violation
	// VerdictInconclusive: no violation was found, but the history is known
	// to be incomplete (a sink dropped records), so the run proves nothing.
	// Never a pass.
	VerdictInconclusive = "inconclusive"
)

// ErrInconclusive is wrapped by Result.Err for a run without violations
// whose history is incomplete.
var ErrInconclusive = errors.New("checker: inconclusive, the history is incomplete")

// Verdict is pass, fail or inconclusive (see the Verdict* constants).
func (r Result) Verdict() string {
	switch {
	case len(r.Violations) > 0:
		return VerdictFail
	case len(r.Inconclusive) > 0:
		return VerdictInconclusive
	}
	return VerdictPass
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
