package checker

import (
	"encoding/json"
	"sort"
	"time"
)

// maxLedgerViolations caps ledger reports so one bad ledger does not bury the
// rest of the verdict.
const maxLedgerViolations = 20

// forcedLoss reports the fault kinds that take the lease from its holder
// at once, behind its back: an operator's break, the deletion of the lock
// blob or its container (storage answers the holder's next renew with 404,
// a definite loss), an operator's hand-written metadata and a rollback
// (each written over a broken lease). All are judged by the forced-break
// rule.
func forcedLoss(kind string) bool {
	switch kind {
	case FaultBreak, FaultDeleteBlob, FaultDeleteContainer, FaultOperatorMetadata, FaultRollback:
		return true
	}
	return false
}

// checkBreaks is the forced-break rule. After a forced loss (forcedLoss)
// the worker that believed it held the lease at that moment must stop
// believing within RenewInterval + RequestTimeout + Epsilon (+ ClockSkew):
// it hears of the loss at its next renew. If a fault that can keep it from
// hearing (cutOff: a freeze, its way to storage cut) was in place at some
// moment of that window, or it was killed before the window ended, its
// belief must end at its own deadline (valid_until) instead. Its overlap
// with the next leader — the first belief of another term that starts at
// or after the loss — is this rule's business and exempt from S1. The
// rule bounds how long two workers may both believe they lead, so it is a
// safety bound and takes no stall (stall.go): a holder that keeps
// believing on a slow machine still acts as a second leader.
func (c *checker) checkBreaks() {
	c.exempt = map[pair]bool{}
	allowed := c.p.RenewInterval + c.p.RequestTimeout() + c.p.Epsilon
	for _, f := range c.run.Faults {
		if !forcedLoss(f.Kind) {
			continue
		}
		b := f.Start
		for h, old := range c.ivs {
			if !f.hits(old.Identity) || !old.contains(b) || old.End.Equal(b) {
				continue
			}
			// 1. The old holder learns at its next renew at the latest —
			// unless it was cut off before that renew could tell it (cutOff:
			// frozen, it learns nothing until it resumes; cut off from
			// storage, nothing definite before its renew deadline) or killed
			// (it never learns). Then its belief ends at its own deadline at
			// the latest (S1's rule for a paused leader; a kill does not cap
			// a belief that has a deadline, see intervals), which is all
			// such a holder can be held to.
			limit := b.Add(allowed + c.p.ClockSkew)
			deaf := old.Valid.Event != "" &&
				(cutOffIn(c.run.Faults, old.Identity, b, limit) || killedIn(c.run.Faults, old.Identity, old.Start, limit))
			if old.End.After(limit) && !deaf {
				c.report(InvBreak, placed(limit, old.Identity), append([]Event{old.Started}, endEvidence(old)...),
					"after %s the holder kept believing until %s, %v after the %s; allowed RenewInterval+RequestTimeout+Epsilon = %v: %s",
					f, c.rel(old.End), old.End.Sub(b), f.Kind, allowed, c.describe(old))
			}
			// 2. Its overlap with the next leader is this rule's business.
			for n := range c.ivs {
				nx := c.ivs[n]
				if n == h || nx.Term == old.Term || nx.Start.Before(b.Add(-c.p.ClockSkew)) {
					continue
				}
				c.exempt[pair{min(h, n), max(h, n)}] = true
				break
			}
		}
	}
}

// cutOff reports the fault kinds that can keep a live worker from hearing
// storage's answer to a renew: its process stopped (paused); its way to
// storage cut, black-holed, slowed past its request timeout or reset
// (partition, timeout, latency, reset, outage); its requests held, their
// answers lost or refused (the request faults).
func cutOff(kind string) bool {
	switch kind {
	case FaultPartition, FaultTimeout, FaultLatency, FaultReset, FaultOutage,
		FaultLateDelivery, FaultLostResponse, FaultRefusal:
		return true
	}
	return paused(kind)
}

// cutOffIn reports whether a fault that can keep id from hearing storage
// (cutOff) was in place at some moment of [from, to].
func cutOffIn(faults []Fault, id string, from, to time.Time) bool {
	for _, f := range faults {
		if cutOff(f.Kind) && f.hits(id) && !f.Start.After(to) && (f.End.IsZero() || !f.End.Before(from)) {
			return true
		}
	}
	return false
}

// killedIn reports whether a crash of id was stamped at some moment of
// [from, to].
func killedIn(faults []Fault, id string, from, to time.Time) bool {
	for _, f := range faults {
		if f.Kind == FaultCrash && f.hits(id) && !f.Start.Before(from) && !f.Start.After(to) {
			return true
		}
	}
	return false
}

// checkS1 is S1: belief intervals of different terms never overlap by more
// than ClockSkew. A pair the forced-break rule exempts is judged there.
func (c *checker) checkS1() {
	for i := range c.ivs {
		a := c.ivs[i]
		for j := i + 1; j < len(c.ivs); j++ {
			b := c.ivs[j]
			if !b.Start.Before(a.End) {
				continue // sorted by start, but ends vary: keep scanning
			}
			if a.Term == b.Term || c.exempt[pair{i, j}] {
				continue
			}
			lo, hi := b.Start, earliest(a.End, b.End) // b starts no earlier than a
			if a.Start.After(lo) {
				lo = a.Start
			}
			overlap := hi.Sub(lo)
			if overlap <= c.p.ClockSkew || overlap <= 0 {
				continue
			}
			ev := append([]Event{a.Started}, endEvidence(a)...)
			ev = append(ev, b.Started)
			ev = append(ev, endEvidence(b)...)
			c.report(InvS1, placed(lo, a.Identity, b.Identity), ev, "terms %d and %d overlap by %v from %s: %s; %s",
				a.Term, b.Term, overlap, c.rel(lo), c.describe(a), c.describe(b))
		}
	}
}

// checkTerms is S2 on terms: every started_leading carries a term, no term
// is started twice, and none is lower than a term started before it (by
// more than ClockSkew).
func (c *checker) checkTerms() {
	var starts []Event
	for _, e := range c.run.Events {
		if e.Event == EventStartedLeading {
			starts = append(starts, e)
		}
	}
	SortEvents(starts)
	first := map[int64]Event{}
	var top Event
	for _, e := range starts {
		if e.Term <= 0 {
			c.report(InvS2, placed(e.T, e.Identity), []Event{e}, "%s started leading without a fencing term", e.Identity)
			continue
		}
		if prev, dup := first[e.Term]; dup {
			c.report(InvS2, placed(e.T, prev.Identity, e.Identity), []Event{prev, e}, "term %d was started twice (%s at %s, %s at %s)",
				e.Term, prev.Identity, c.rel(prev.T), e.Identity, c.rel(e.T))
			continue
		}
		first[e.Term] = e
		if top.Event != "" && e.Term < top.Term && e.T.Sub(top.T) > c.p.ClockSkew {
			c.report(InvS2, placed(e.T, e.Identity), []Event{top, e}, "terms must strictly increase: %s started term %d at %s, after %s started term %d at %s",
				e.Identity, e.Term, c.rel(e.T), top.Identity, top.Term, c.rel(top.T))
		}
		if top.Event == "" || e.Term > top.Term {
			top = e
		}
	}
}

func quoteEntry(e LedgerEntry) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// checkLedger is S2 on the ledger: its sequence runs from 1 (it is never
// trimmed, so a first entry above 1 means lost entries) with no gap,
// duplicate or reordering; terms never decrease along it; and every entry
// carries a term some worker started, written by that term's leader and
// stamped no later than its belief's end (+ ClockSkew). Entries stamped
// before the run began are held only to the sequence and term order. At
// most maxLedgerViolations are listed.
func (c *checker) checkLedger() {
	n := 0
	var e LedgerEntry // the entry being judged
	report := func(ev []Event, format string, args ...any) {
		n++
		if n <= maxLedgerViolations {
			c.report(InvS2, placed(e.At, e.Holder), ev, "ledger: "+format, args...)
		}
	}
	byTerm := map[int64][]Interval{}
	for _, iv := range c.ivs {
		byTerm[iv.Term] = append(byTerm[iv.Term], iv)
	}
	seen := map[int64]bool{}
	var prev *LedgerEntry
	for i := range c.run.Ledger {
		e = c.run.Ledger[i]
		// 1. Sequence: contiguous from 1, no duplicates. The ledger is
		// never trimmed, so a first seq above 1 means lost entries.
		switch {
		case prev == nil && e.Seq != 1:
			report(nil, "the first entry has seq %d, want 1 (entries 1..%d missing): %s", e.Seq, e.Seq-1, quoteEntry(e))
		case seen[e.Seq]:
			report(nil, "duplicate seq %d: %s", e.Seq, quoteEntry(e))
		case prev != nil && e.Seq > prev.Seq+1:
			report(nil, "missing seq %d..%d between %s and %s", prev.Seq+1, e.Seq-1, quoteEntry(*prev), quoteEntry(e))
		case prev != nil && e.Seq < prev.Seq:
			report(nil, "seq out of order: %s after %s", quoteEntry(e), quoteEntry(*prev))
		}
		seen[e.Seq] = true
		// 2. Terms never decrease along the ledger.
		if prev != nil && e.Term < prev.Term {
			report(nil, "term decreased from %d to %d: %s after %s", prev.Term, e.Term, quoteEntry(e), quoteEntry(*prev))
		}
		if prev == nil || e.Seq > prev.Seq {
			prev = &c.run.Ledger[i]
		}
		// 3. Every entry carries a term some worker started, and was
		// written by that term's leader while it believed it led.
		if e.Term <= 0 {
			report(nil, "entry without a fencing term: %s", quoteEntry(e))
			continue
		}
		if !c.start.IsZero() && e.At.Before(c.start) {
			continue // written before this run's history began
		}
		ivs := byTerm[e.Term]
		if len(ivs) == 0 {
			report(nil, "term %d was never started in the history: %s", e.Term, quoteEntry(e))
			continue
		}
		var iv *Interval
		for k := range ivs {
			if ivs[k].Identity == e.Holder {
				iv = &ivs[k]
			}
		}
		if iv == nil {
			report([]Event{ivs[0].Started}, "entry of term %d written by %q, but %s started that term: %s",
				e.Term, e.Holder, ivs[0].Identity, quoteEntry(e))
			continue
		}
		if e.At.After(iv.End.Add(c.p.ClockSkew)) {
			report(append([]Event{iv.Started}, endEvidence(*iv)...), "entry stamped %v after its term's belief ended (%s): %s",
				e.At.Sub(iv.End), c.describe(*iv), quoteEntry(e))
		}
	}
	if n > maxLedgerViolations {
		c.report(InvS2, where{}, nil, "ledger: %d more ledger violation(s) not listed", n-maxLedgerViolations)
	}
}

// sortedFaults returns the faults by start time.
func sortedFaults(fs []Fault) []Fault {
	out := append([]Fault(nil), fs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
