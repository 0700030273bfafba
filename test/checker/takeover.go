package checker

import (
	"strings"
	"time"
)

// Early takeover (docs/failover.md#early-takeover). A follower that reads
// the leader's record unchanged for long enough breaks the lease at once
// (break period 0), conditioned on that record, and logs lease_broken: its
// time is after the break was answered, stale_ms how long (on its own
// clock) it had read the same record — from the answer of the first read
// that showed it to the send of the read that judged it — and heartbeat the
// heartbeat in it.

// EventLeaseBroken is a follower's break of a stale lease (additive to the
// history contract, docs/architecture.md).
const EventLeaseBroken = "lease_broken"

// InvTakeover names the early-takeover rules' violations.
const InvTakeover = "takeover"

// takeoverBound is L1 after a crash or a freeze of a heartbeating leader,
// counted from its last logged belief's basis (valid_until − D: the send of
// the heartbeat, or renew, its deadline counts from). A heartbeat of the
// next cycle may still have landed unlogged: it is sent within
// RenewInterval + 2 request timeouts of the basis (the gap a heartbeating
// leader publishes) and lands a request timeout later; a follower's read shows
// it within 1.1·P and a request; the follower reads again T later (T ≥
// what the holder published); that read, the break, the acquire, the term
// read and the term write take a request each; ε for the rest. Zero with
// early takeover off.
func (p Params) takeoverBound() time.Duration {
	if p.TakeoverAfter <= 0 {
		return 0
	}
	return p.TakeoverAfter + p.RenewInterval + p.retry() + 9*p.RequestTimeout() + p.Epsilon
}

// checkTakeovers judges every lease_broken:
//   - no false takeover: the broken leader must not have written a heartbeat
//     (a renewed event with a heartbeat, of the broken term) that was sent
//     after the breaker's first read of the record and answered before the
//     break: storage would have refused a break conditioned on a record
//     that had changed;
//   - E1, the broken leader stopped first: nobody starts leading a later
//     term before the broken leader's belief ended (its last valid_until)
//     and a request it had in flight was over (+ the request timeout),
//     unless the holder released the lease itself, an operator broke it or
//     deleted the lock in between, or the lease expired (rules of their
//     own).
func (c *checker) checkTakeovers() {
	skew := c.p.ClockSkew
	for _, b := range c.run.Events {
		if b.Event != EventLeaseBroken {
			continue
		}
		from := b.T.Add(-time.Duration(b.StaleMS) * time.Millisecond)
		for _, e := range c.run.Events {
			if e.Event != EventRenewed || e.Identity != b.Leader || e.Term != b.Term || e.Heartbeat == 0 || e.ValidUntil.IsZero() {
				continue
			}
			sent := e.ValidUntil.Add(-c.p.RenewDeadline)
			if !sent.Before(from.Add(skew)) && !e.T.After(b.T.Add(-skew)) {
				c.report(InvTakeover, placed(b.T, b.Identity, b.Leader), []Event{b, e},
					"%s broke %s's lease (term %d) as stale at %s, but %s wrote heartbeat %d between %s and %s, inside the %v the breaker says it read the record unchanged: a false takeover of a leader whose record had changed",
					b.Identity, b.Leader, b.Term, c.rel(b.T), b.Leader, e.Heartbeat, c.rel(sent), c.rel(e.T), time.Duration(b.StaleMS)*time.Millisecond)
				break
			}
		}
		stopped, last := c.stoppedBy(b.Leader, b.Term)
		if stopped.IsZero() {
			continue // the broken leader logged no bounded belief: nothing to hold it to
		}
		for _, e := range c.run.Events {
			if e.Event != EventStartedLeading || e.T.Before(b.T.Add(-skew)) || e.Term <= b.Term {
				continue
			}
			if !e.T.Before(stopped.Add(-skew)) || c.freedEarly(b, e.T) {
				break
			}
			c.report(InvTakeover, placed(e.T, e.Identity, b.Leader), []Event{b, last, e},
				"%s started leading term %d at %s, after %s broke %s's lease, but before %s had stopped: its belief ran until %s, and a request of it in flight until %s",
				e.Identity, e.Term, c.rel(e.T), b.Identity, b.Leader, b.Leader, c.rel(last.ValidUntil), c.rel(stopped))
			break
		}
	}
}

// stoppedBy is when leader's term had stopped acting, by its own events: the
// last valid_until it logged for the term plus a request timeout (a request
// sent just before its deadline); last is the event that logged it. Zero
// when it logged none.
func (c *checker) stoppedBy(leader string, term int64) (time.Time, Event) {
	var last Event
	for _, e := range c.run.Events {
		if e.Identity == leader && e.Term == term && e.ValidUntil.After(last.ValidUntil) {
			last = e
		}
	}
	if last.ValidUntil.IsZero() {
		return time.Time{}, last
	}
	return last.ValidUntil.Add(c.p.RequestTimeout()), last
}

// freedEarly reports whether the lease broken by b was freed, before until,
// by something other than b's break: its holder's own release (logged, or
// sent: a holder that stepped down for any reason but a lost lease releases
// after logging stopped_leading, and a release held up by a slow link may
// land with its answer lost), an operator's break or a deletion of the
// lock, or the lease itself, expired (L after the holder's last successful
// renew, sent at its latest valid_until − D at the earliest).
func (c *checker) freedEarly(b Event, until time.Time) bool {
	for _, e := range c.run.Events {
		if e.Event == EventStoppedLeading && e.Identity == b.Leader && e.Term == b.Term && !e.T.After(until) && !strings.HasPrefix(e.Reason, "lease lost") {
			return true
		}
	}
	var vu time.Time
	for _, e := range c.run.Events {
		if e.Identity == b.Leader && e.Term == b.Term && e.ValidUntil.After(vu) {
			vu = e.ValidUntil
		}
	}
	if !vu.IsZero() && !until.Before(vu.Add(c.p.LeaseDuration-c.p.RenewDeadline-c.p.ClockSkew)) {
		return true
	}
	for _, e := range c.run.Events {
		if e.Event == EventReleased && e.Identity == b.Leader && e.Term == b.Term && !e.T.Before(b.T) && !e.T.After(until) {
			return true
		}
	}
	for _, f := range c.run.Faults {
		if forcedLoss(f.Kind) && !f.Start.Before(b.T.Add(-c.p.ClockSkew)) && !f.Start.After(until) {
			return true
		}
	}
	return false
}

// leaseBreaks counts lease_broken events.
func (c *checker) leaseBreaks() int {
	n := 0
	for _, e := range c.run.Events {
		if e.Event == EventLeaseBroken {
			n++
		}
	}
	return n
}
