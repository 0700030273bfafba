package checker

import (
	"fmt"
	"strings"
	"time"
)

// InvEvidence names violations of missing evidence: a run that saw too little
// to judge has not passed (a worker without history, a requirement of the
// scenario not met).
const InvEvidence = "evidence"

// Requirements is the minimum evidence a scenario states it needs. A zero
// field demands nothing; every non-zero one that the run does not meet is an
// `evidence` violation, so a scenario whose fault missed (hit a follower, hit
// nobody, produced no failover) fails instead of passing on nothing.
type Requirements struct {
	// LeadershipsBeforeFault: started_leading events before the first fault
	// (the fault must hit a working cluster).
	LeadershipsBeforeFault int `json:"leaderships_before_fault,omitzero"`
	// HitLeader: fault kinds of which at least one fault each must have hit
	// the leader of the moment: its target (or, for a fault on every
	// worker, anyone) believed it led at the fault's start.
	HitLeader []string `json:"hit_leader,omitzero"`
	// Failovers: failovers measured after faults that hit the leader (a new
	// leader found and judged, not inconclusive).
	Failovers int `json:"failovers,omitzero"`
	// LeadershipsAfterFault: started_leading events after the last fault's
	// start (the cluster recovered, whatever the fault's L1 rule).
	LeadershipsAfterFault int `json:"leaderships_after_fault,omitzero"`
	// LedgerEntries: entries in the ledger read back (the task ran).
	LedgerEntries int `json:"ledger_entries,omitzero"`
	// LeaseBreaks: lease_broken events (early takeover happened).
	LeaseBreaks int `json:"lease_breaks,omitzero"`
}

// checkHistories reports every worker the cluster started that left no
// history at all: whatever it did is invisible, so the run proves nothing
// about it. (Every contending worker logs within its first poll:
// observed_leader, started_leading or acquire_failed.)
func (c *checker) checkHistories() {
	seen := map[string]bool{}
	for _, e := range c.run.Events {
		seen[e.Identity] = true
	}
	for _, w := range c.run.Workers {
		if !seen[w.Identity] {
			c.report(InvEvidence, placed(c.end, w.Identity), nil,
				"worker %s was started but left no history (no event with its identity): its behaviour cannot be judged", w.Identity)
		}
	}
}

// checkRequirements reports each unmet Requirements field, saying what was
// required and what the run showed.
func (c *checker) checkRequirements() {
	req := c.run.Requires
	faults := sortedFaults(c.run.Faults)
	var first, last time.Time
	if len(faults) > 0 {
		first, last = faults[0].Start, faults[len(faults)-1].Start
	}
	starts := func(keep func(time.Time) bool) int {
		n := 0
		for _, e := range c.run.Events {
			if e.Event == EventStartedLeading && keep(e.T) {
				n++
			}
		}
		return n
	}
	if n := req.LeadershipsBeforeFault; n > 0 {
		switch got := starts(func(t time.Time) bool { return first.IsZero() || t.Before(first) }); {
		case len(faults) == 0:
			c.report(InvEvidence, placed(c.end), nil, "the scenario requires %d leadership(s) before its first fault, but no fault was injected", n)
		case got < n:
			c.report(InvEvidence, placed(first), nil, "the scenario requires %d leadership(s) before its first fault (%s); the history has %d", n, c.rel(first), got)
		}
	}
	for _, kind := range req.HitLeader {
		var tried []string
		hit := false
		for _, f := range faults {
			if f.Kind != kind {
				continue
			}
			tried = append(tried, f.String())
			if _, ok := c.holderAt(f, f.Start); ok {
				hit = true
				break
			}
		}
		if !hit {
			what := "no " + kind + " fault was injected"
			if len(tried) > 0 {
				what = "none hit a worker that believed it led at its start: " + strings.Join(tried, "; ")
			}
			c.report(InvEvidence, placed(first), nil, "the scenario requires a %s fault that hits the leader; %s", kind, what)
		}
	}
	if n := req.LeaseBreaks; n > 0 {
		if got := c.leaseBreaks(); got < n {
			c.report(InvEvidence, placed(c.end), nil, "the scenario requires %d early-takeover break(s) (lease_broken); the history has %d", n, got)
		}
	}
	if n := req.Failovers; n > 0 {
		got := 0
		for _, fo := range c.failovers {
			if !fo.To.IsZero() && fo.Inconclusive == "" {
				got++
			}
		}
		if got < n {
			c.report(InvEvidence, placed(c.end), nil, "the scenario requires %d measured failover(s); the run has %d (of %d fault(s) that hit the leader)", n, got, len(c.failovers))
		}
	}
	if n := req.LeadershipsAfterFault; n > 0 {
		switch got := starts(func(t time.Time) bool { return !t.Before(last) }); {
		case len(faults) == 0:
			c.report(InvEvidence, placed(c.end), nil, "the scenario requires %d leadership(s) after its last fault, but no fault was injected", n)
		case got < n:
			c.report(InvEvidence, placed(c.end), nil, "the scenario requires %d leadership(s) after its last fault (%s); the history has %d", n, c.rel(last), got)
		}
	}
	if n := req.LedgerEntries; n > 0 && len(c.run.Ledger) < n {
		c.report(InvEvidence, placed(c.end), nil, "the scenario requires %d ledger entries; %d were read back", n, len(c.run.Ledger))
	}
}

// String lists the non-zero requirements, for logs.
func (r Requirements) String() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("≥%d %s", n, what))
		}
	}
	add(r.LeadershipsBeforeFault, "leadership(s) before the fault")
	for _, k := range r.HitLeader {
		parts = append(parts, k+" hit the leader")
	}
	add(r.Failovers, "failover(s) measured")
	add(r.LeadershipsAfterFault, "leadership(s) after the last fault")
	add(r.LedgerEntries, "ledger entries")
	add(r.LeaseBreaks, "early-takeover break(s)")
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}
