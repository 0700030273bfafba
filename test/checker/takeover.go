package checker

import (
	"strings"
	"time"
)

// Early takeover (docs/failover.md#early-takeover). A follower that reads
// the leader's heartbeat unchanged for T breaks the lease with a break
// period B and logs lease_broken: its time is the send of the read that
// found the heartbeat stale, stale_ms how long (on its own clock) it had
// read the same heartbeat, heartbeat the value, break_period_ms B.

// EventLeaseBroken is a follower's break of a stale lease (additive to the
// history contract, docs/architecture.md).
const EventLeaseBroken = "lease_broken"

// InvTakeover names the early-takeover rules' violations.
const InvTakeover = "takeover"

// takeoverBound is L1 after a crash or a freeze of a heartbeating leader,
// from its last successful renew's send: the last heartbeat lands within
// two request timeouts; a follower reads it within 1.1·P and one more
// request; it finds it stale at a read sent within T + 1.1·P of that; the
// break takes one more request to answer, B to pass, and the acquire,
// term read and term write the ε. Zero with early takeover off.
func (p Params) takeoverBound() time.Duration {
	if p.TakeoverAfter <= 0 {
		return 0
	}
	return p.TakeoverAfter + p.BreakPeriod + 2*p.retry() + 5*p.RequestTimeout() + p.Epsilon
}

// checkTakeovers judges every lease_broken:
//   - no false takeover: the broken leader must not have written a heartbeat
//     (a renewed event with a heartbeat, of the broken term) that was sent
//     after the breaker's first read of the stale value and answered before
//     the read that found it stale: the breaker would have read it, so its
//     heartbeat was fresh by the breaker's own clock;
//   - the break period holds: nobody starts leading before the break's
//     send + B, unless the holder released the lease itself, or an operator
//     broke it or deleted the lock in between (rules of their own).
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
					"%s broke %s's lease (term %d) as stale at %s, but %s wrote heartbeat %d between %s and %s, inside the %v the breaker says it read heartbeat %d unchanged: a false takeover of a leader whose heartbeat was fresh",
					b.Identity, b.Leader, b.Term, c.rel(b.T), b.Leader, e.Heartbeat, c.rel(sent), c.rel(e.T), time.Duration(b.StaleMS)*time.Millisecond, b.Heartbeat)
				break
			}
		}
		period := time.Duration(b.BreakPeriodMS) * time.Millisecond
		if period <= 0 {
			c.report(InvTakeover, placed(b.T, b.Identity), []Event{b}, "%s logged a lease_broken without its break period", b.Identity)
			continue
		}
		passed := b.T.Add(period)
		for _, e := range c.run.Events {
			if e.Event != EventStartedLeading || e.T.Before(b.T) || e.Term <= b.Term {
				continue
			}
			if !e.T.Before(passed.Add(-skew)) || c.freedEarly(b, e.T) {
				break
			}
			c.report(InvTakeover, placed(e.T, e.Identity, b.Leader), []Event{b, e},
				"%s started leading term %d at %s, before the break of %s's lease sent at %s had passed (break period %v, until %s)",
				e.Identity, e.Term, c.rel(e.T), b.Leader, c.rel(b.T), period, c.rel(passed))
			break
		}
	}
}

// freedEarly reports whether the lease broken by b was freed before its
// break period by someone entitled to: its holder's own release (logged, or
// sent: a holder that stepped down for any reason but a lost lease releases
// after logging stopped_leading, and a release held up by a slow link may
// land with its answer lost), an operator's break or a deletion of the
// lock, or the lease itself, expired (storage ends a break at the lease's
// end when that comes first: L after the holder's last successful renew,
// sent at its latest valid_until − D).
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
