package checker

import (
	"strings"
	"time"
)

// InvKeep: a leader keeps its term through slow storage that fails none of
// its renews. Latency below the request timeout (on every request, or on the
// reads a --shards coordinator makes of each member's report) must not depose
// a leader by its own stall watchdog: its task's progress signal must not
// depend on how slow storage is or how many members there are
// (docs/architecture.md#shards).
const InvKeep = "keep"

// slowFault reports the kinds that slow a worker's storage without failing
// it, when kept below the request timeout.
func slowFault(kind string) bool { return kind == FaultLatency || kind == FaultSlowReads }

// checkKept reports a leadership ended by the watchdog while a slow-storage
// fault was on its holder and the holder logged no renew failure for that
// term since the fault began: a leader deposed by its own watchdog. It
// takes no stall (stall.go): the rule has no allowance to add one to — the
// watchdog fires only after its whole timeout (10 s by default) without
// progress, which a stalled machine would show as seconds of stall in the
// run's report, and the scenarios that judge it keep the watchdog's
// timeout far above the ticks it watches.
func (c *checker) checkKept() {
	for _, f := range c.run.Faults {
		if !slowFault(f.Kind) || f.End.IsZero() {
			continue
		}
		for _, iv := range c.ivs {
			st := iv.Stopped
			if st.T.IsZero() || !f.hits(iv.Identity) || !strings.HasPrefix(st.Reason, "watchdog") {
				continue
			}
			if st.T.Before(f.Start) || st.T.After(f.End) {
				continue
			}
			if c.renewFailed(iv.Identity, iv.Term, f.Start, st.T) {
				continue // storage did fail it: the watchdog is not alone to blame
			}
			c.report(InvKeep, placed(st.T, iv.Identity), []Event{iv.Started, st},
				"%s was deposed from term %d by its own watchdog during %s with no renew failing: leadership must not depend on storage latency below the request timeout (or on the number of members)",
				iv.Identity, iv.Term, f)
		}
	}
}

// renewFailed reports whether id logged renew_failed for term in [from, to].
func (c *checker) renewFailed(id string, term int64, from, to time.Time) bool {
	for _, e := range c.run.Events {
		if e.Identity == id && e.Event == EventRenewFailed && e.Term == term && !e.T.Before(from) && !e.T.After(to) {
			return true
		}
	}
	return false
}
