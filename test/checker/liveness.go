package checker

import (
	"fmt"
	"time"
)

// Basis values of Failover.Basis.
const (
	BasisLastRenew = "last renew sent" // valid_until − RenewDeadline of the hit leader
	// BasisLastHeartbeat: the same moment for a leader that heartbeats,
	// with early takeover's bound (takeover.go).
	BasisLastHeartbeat = "last renew and heartbeat sent"
	// BasisInFlight: a frozen leader's renew may have been sent, granted
	// and never logged (maybeInFlight).
	BasisInFlight = "freeze, a renew maybe in flight"
	// BasisGranted: a killed leader's last renew that storage granted (its
	// proxy saw the 2xx), later than any it logged (grantedBefore).
	BasisGranted  = "last renew storage granted"
	BasisInjected = "fault injected" // the hit leader logged no valid_until
	BasisReleased = "released"       // the graceful stop's `released` event
	BasisBreak    = "lease broken"   // the break itself
	BasisDeleted  = "lock deleted"   // the deletion of the lock blob or its container
	BasisFaultEnd = "fault healed"   // end of a network or storage fault
)

// windowFault reports kinds that last from Start to End and can keep every
// worker (or the one they target) from reaching storage. A late delivery is
// one: held renews keep the target from renewing, and when delivered they
// may still extend its lease at storage until the fault is removed. A
// refusal is one: storage answers the target, but applies nothing.
func windowFault(kind string) bool {
	switch kind {
	case FaultLatency, FaultTimeout, FaultReset, FaultPartition, FaultOutage, FaultLateDelivery, FaultRefusal:
		return true
	}
	return false
}

// holderAt returns the first interval (by start) whose belief covers t and
// whose worker the fault hits.
func (c *checker) holderAt(f Fault, t time.Time) (Interval, bool) {
	for _, iv := range c.ivs {
		// A belief that ends exactly at t was over, unless the kill at t ended it.
		if f.hits(iv.Identity) && iv.contains(t) && (iv.End.After(t) || iv.EndedBy == EndCrash) {
			return iv, true
		}
	}
	return Interval{}, false
}

// nextStart returns the first started_leading at or after t. After a crash
// or a graceful stop it cannot be the stopped process's own, so a restarted
// worker with the same identity counts as the new leader.
func (c *checker) nextStart(t time.Time) (Event, bool) {
	for _, e := range c.run.Events {
		if e.Event == EventStartedLeading && !e.T.Before(t) {
			return e, true
		}
	}
	return Event{}, false
}

// checkFailovers is L1: after a fault that hit the leader of the moment
// (its target believed it led at the fault's start), a new leader starts
// within the bound docs/failover.md#liveness-how-long-until-a-new-leader
// gives for that fault. With R = P·1.1 + ε (a follower's worst poll gap
// plus the acquire's own work):
//
//	crash       next started_leading ≤ last renew + L + R
//	pause, supervisor_freeze
//	            the same, unless resumed before its valid_until (then nothing)
//	graceful    next started_leading ≤ released + R (crash's bound without `released`)
//	break, metadata_rollback, delete_blob, delete_container
//	            next started_leading ≤ the fault + R
//	latency, timeout, reset, partition, outage, late_delivery, refusal,
//	operator_metadata (each healed)
//	            a leader exists (a belief covering End, or the next start) ≤ End + L + R
//
// The last renew is the send of the hit leader's last successful renew
// (lastRenew): its latest valid_until − D, or the fault itself when it
// logged none. Under early takeover a heartbeating leader's bound is the
// shorter takeoverBound. Other faults in the window stretch the deadline
// (stretch), and a deadline may be overrun by ClockSkew. A failover the run
// cannot judge — it ended before the deadline, or a fault in the window was
// never healed — is Inconclusive, not a violation. Every step of a
// failover (a poll, an acquire, a log line) needs the machine to run a
// worker when it is due: a deadline missed by no more than the CPU probe's
// stall from From to the next start is inconclusive (stall.go).
func (c *checker) checkFailovers() {
	for _, f := range sortedFaults(c.run.Faults) {
		hit, ok := c.leaderHitBy(f)
		if !ok {
			continue
		}
		j := &failoverJudge{c: c, f: f, hit: hit, after: f.Start, evidence: []Event{hit.Started},
			fo: Failover{Kind: f.Kind, Target: f.Target, Injected: f.Start, Leader: hit.Identity, Term: hit.Term}}
		if !j.countFrom() {
			continue
		}
		j.fo.Deadline = j.fo.From.Add(j.fo.Bound)
		c.stretch(f, &j.fo)
		j.measure()
		j.judge()
		c.failovers = append(c.failovers, j.fo)
	}
}

// leaderHitBy returns the belief a fault hit, if it is one that demands a
// failover: a crash, a graceful stop, a freeze or a forced loss of the
// leader of the moment, or a window fault on it that was healed (one never
// healed demands nothing; nor does an operator's metadata never repaired).
func (c *checker) leaderHitBy(f Fault) (Interval, bool) {
	switch {
	case f.Kind == FaultOperatorMetadata || windowFault(f.Kind):
		hit, ok := c.holderAt(f, f.Start)
		return hit, ok && !f.End.IsZero()
	case f.Kind == FaultCrash || f.Kind == FaultGraceful || paused(f.Kind) || forcedLoss(f.Kind):
		return c.holderAt(f, f.Start)
	}
	return Interval{}, false
}

// longBound is L1's bound when the lease must expire first: L + P·1.1 + ε.
func (c *checker) longBound() time.Duration { return c.p.LeaseDuration + c.p.retry() + c.p.Epsilon }

// shortBound is L1's bound when the lease is already free: P·1.1 + ε.
func (c *checker) shortBound() time.Duration { return c.p.retry() + c.p.Epsilon }

// failoverJudge is one fault's failover while L1 judges it.
type failoverJudge struct {
	c        *checker
	f        Fault
	hit      Interval  // the leader's belief the fault hit
	after    time.Time // the next leader must start at or after this
	evidence []Event   // the events behind From and To
	fo       Failover
}

// countFrom sets where the bound counts from and the bound, per fault kind
// (the table of checkFailovers). It returns false when the fault demands
// no failover after all: a freeze the leader resumed from before its
// deadline.
func (j *failoverJudge) countFrom() bool {
	c, f, fo := j.c, j.f, &j.fo
	switch f.Kind {
	case FaultCrash:
		j.lastRenew()
	case FaultGraceful:
		if rel, ok := c.releasedAfter(j.hit.Identity, f.Start); ok {
			fo.From, fo.Basis, fo.Bound = rel.T, BasisReleased, c.shortBound()
			j.evidence = append(j.evidence, rel)
		} else {
			j.lastRenew() // no release logged: the lease must expire
			fo.Basis += " (no released event)"
		}
	case FaultPause, FaultSupervisorFreeze:
		if vu, _, ok := j.hit.validAt(j.cutoff()); ok && !f.End.IsZero() && !f.End.After(vu) {
			return false // resumed before its deadline: it never stopped leading
		}
		j.lastRenew()
	case FaultBreak, FaultRollback:
		fo.From, fo.Basis, fo.Bound = f.Start, BasisBreak, c.shortBound()
	case FaultDeleteBlob, FaultDeleteContainer:
		fo.From, fo.Basis, fo.Bound = f.Start, BasisDeleted, c.shortBound()
	default: // network and storage faults: a leader exists again after End
		fo.From, fo.Basis, fo.Bound = f.End, BasisFaultEnd, c.longBound()
		j.after = f.End
		if iv, ok := c.anyLeaderAt(f.End); ok {
			fo.To, fo.NewLeader, fo.NewTerm = f.End, iv.Identity, iv.Term
		}
	}
	return true
}

// cutoff is the latest moment a deadline the hit leader logged counts:
// a killed process logs nothing after its death and a paused one nothing
// before it resumes, so every deadline logged (before End, for a pause)
// was earned before the fault bit, even one logged in the instant between
// the harness stamping Start and the signal. Zero: every deadline counts.
func (j *failoverJudge) cutoff() time.Time {
	if paused(j.f.Kind) && !j.f.End.IsZero() {
		return j.f.End
	}
	return time.Time{}
}

// lastRenew counts the lease's bound from the hit leader's last successful
// renew send (valid_until − D), moved later by a renew a frozen leader may
// have had in flight (maybeInFlight) or, after a kill, by the last renew
// storage granted (grantedBefore); from the fault when it logged no
// deadline. A heartbeating leader under early takeover gets takeoverBound
// when that is shorter.
func (j *failoverJudge) lastRenew() {
	c, f, fo := j.c, j.f, &j.fo
	fo.Bound = c.longBound()
	vu, ev, ok := j.hit.validAt(j.cutoff())
	if !ok {
		fo.From, fo.Basis = f.Start, BasisInjected
		return
	}
	fo.From, fo.Basis = vu.Add(-c.p.RenewDeadline), BasisLastRenew
	if paused(f.Kind) {
		if from := c.maybeInFlight(j.hit, fo.From, f.Start); from.After(fo.From) {
			fo.From, fo.Basis = from, BasisInFlight
		}
	}
	if f.Kind == FaultCrash {
		if from, ok := c.grantedBefore(j.hit, f); ok && from.After(fo.From) {
			fo.From, fo.Basis = from, BasisGranted
		}
	}
	j.evidence = append(j.evidence, ev)
	if fast := c.p.takeoverBound(); fast > 0 && fast < fo.Bound && ev.Heartbeat > 0 {
		fo.Bound, fo.Basis = fast, BasisLastHeartbeat // broken early (takeover.go)
	}
}

// measure finds the next leader and the failover's duration.
func (j *failoverJudge) measure() {
	fo := &j.fo
	if fo.To.IsZero() {
		if e, ok := j.c.nextStart(j.after); ok {
			fo.To, fo.NewLeader, fo.NewTerm = e.T, e.Identity, e.Term
			j.evidence = append(j.evidence, e)
		}
	}
	if !fo.To.IsZero() {
		fo.Duration = max(fo.To.Sub(fo.From), 0)
	}
}

// judge reports a failover past its deadline (+ ClockSkew), or marks it
// inconclusive when the run could not tell.
func (j *failoverJudge) judge() {
	c, f, fo := j.c, j.f, &j.fo
	limit := fo.Deadline.Add(c.p.ClockSkew)
	switch {
	case fo.Inconclusive != "":
		if !fo.To.IsZero() && !fo.To.After(limit) {
			fo.Inconclusive = "" // met the bound anyway
		}
	case !fo.To.IsZero():
		if fo.To.After(limit) {
			b := timing{From: fo.From, Due: limit, Got: fo.To}
			fo.Stall = c.run.Sched.StallIn(b.From, b.Got)
			c.overrun(InvL1, placed(fo.Deadline, fo.Leader), b, j.evidence, "after %s (leader %s, term %d) the next leader %s started at %s, %v after %s at %s; bound %v, deadline %s",
				f, fo.Leader, fo.Term, fo.NewLeader, c.rel(fo.To), fo.To.Sub(fo.From), fo.Basis, c.rel(fo.From), fo.Bound, c.rel(fo.Deadline))
		}
	case c.end.After(limit):
		b := timing{From: fo.From, Due: limit, Got: c.end}
		fo.Stall = c.run.Sched.StallIn(b.From, b.Got)
		c.overrun(InvL1, placed(fo.Deadline, fo.Leader), b, j.evidence, "after %s (leader %s, term %d) no leader by the deadline %s (bound %v from %s at %s); run ended %s",
			f, fo.Leader, fo.Term, c.rel(fo.Deadline), fo.Bound, fo.Basis, c.rel(fo.From), c.rel(c.end))
	default:
		fo.Inconclusive = fmt.Sprintf("run ended at %s, before the deadline %s", c.rel(c.end), c.rel(fo.Deadline))
	}
}

// maybeInFlight returns the latest moment a renew the frozen leader never
// logged can have been sent, for a freeze (pause, supervisor freeze) at
// frozen of the leadership hit whose last logged renew was sent at sent.
//
// Why: the leader renews on its own goroutine once per RenewInterval and
// logs `renewed` only after the answer; SIGSTOP can land between the send
// and the log. Storage then holds the lease until that renew's send + L,
// which the history never shows (docs/chaos.md#checker-rules).
//
// The rule: with no attempt logged after sent, the next renew is due at
// its tick, sent + RenewInterval, or — if the one before was still in
// flight at the tick — when that one answers, at most one request timeout
// later; a freeze stops any later send. So the unlogged renew left at or
// before min(frozen, anchor + RenewInterval + request timeout), where the
// anchor is the last attempt logged before the freeze (a `renew_failed`
// means the loop went on to the next tick). Only one renew is in flight at a
// time, so nothing later can be hidden. A killed process gets no such
// allowance: its unlogged renew is judged by storage's answer instead
// (grantedBefore); network faults get none.
func (c *checker) maybeInFlight(hit Interval, sent, frozen time.Time) time.Time {
	anchor := sent
	for _, e := range c.run.Events {
		if e.Identity == hit.Identity && e.Term == hit.Term && e.Event == EventRenewFailed &&
			e.T.After(anchor) && !e.T.After(frozen) {
			anchor = e.T
		}
	}
	latest := anchor.Add(c.p.RenewInterval + c.p.RequestTimeout())
	if frozen.Before(latest) {
		latest = frozen
	}
	return latest
}

// grantedBefore returns when storage last answered a renew of the killed
// leader hit with a 2xx, by its proxy's record (Run.GrantedRenews).
//
// Why: the leader logs `renewed` after the answer, so a kill can land
// between storage granting a renew and the log line; the lease then lasts
// until that grant + L, which the history never shows. DESIGN's L1 counts
// from the last *successful* renew, and storage's answer is the evidence of
// it. Storage granted it before it answered, so the answer is the latest the
// lease can have been extended from. A request that reached the slot's
// proxy after the leadership began and before the worker was restarted
// (the fault's End; its Start when it has none) was sent by the killed
// process: nothing else runs in that slot meanwhile. Only renews of the
// lock blob count: in shard mode the same process renews its shard leases
// through the same proxy.
func (c *checker) grantedBefore(hit Interval, f Fault) (time.Time, bool) {
	slot := hit.Identity
	if s, ok := c.run.Slots[hit.Identity]; ok {
		slot = s
	}
	until := f.End
	if until.IsZero() {
		until = f.Start
	}
	var last time.Time
	for _, g := range c.run.GrantedRenews {
		if g.Slot == slot && c.run.LockPath != "" && g.Path == c.run.LockPath &&
			!g.Arrived.Before(hit.Started.T) && !g.Arrived.After(until) && g.Answered.After(last) {
			last = g.Answered
		}
	}
	return last, !last.IsZero()
}

// stretch moves fo.Deadline past every other fault that could keep a new
// leader from acquiring while the window is open; a fault never healed makes
// the failover inconclusive. A lost response costs the contender whose
// answer was dropped one more poll (it retries with the same lease ID and
// re-acquires its own lease), never a lease duration: a ghost lease that
// blocks everyone for L is an L1 violation. Each lost_response fault counts
// as one lost answer, however long it stayed in place (the scenarios and
// the soak inject them with Count 1); one that drops more makes the bound
// too tight, a false failure rather than a false pass.
func (c *checker) stretch(self Fault, fo *Failover) {
	lost := map[int]bool{} // lost_response faults already counted
	for changed := true; changed; {
		changed = false
		for i, g := range c.run.Faults {
			if g.Kind == FaultLostResponse && !lost[i] && g.Start.Before(fo.Deadline) && (g.End.IsZero() || g.End.After(fo.From)) {
				lost[i], changed = true, true
				if g.End.IsZero() {
					fo.Inconclusive = fmt.Sprintf("overlaps %s, never healed", g)
					continue
				}
				// From the deadline, not from the fault's end: a ghost
				// lease also delays the answers a scenario waits to drop.
				fo.Deadline = fo.Deadline.Add(c.p.retry() + c.p.Epsilon)
				continue
			}
			if g == self || !(windowFault(g.Kind) || paused(g.Kind)) {
				continue
			}
			if !g.Start.Before(fo.Deadline) || (!g.End.IsZero() && !g.End.After(fo.From)) {
				continue // outside the window
			}
			if g.End.IsZero() {
				fo.Inconclusive = fmt.Sprintf("overlaps %s, never healed", g)
				continue
			}
			if d := g.End.Add(c.p.LeaseDuration + c.p.retry() + c.p.Epsilon); d.After(fo.Deadline) {
				fo.Deadline, changed = d, true
			}
		}
	}
}

// releasedAfter returns id's first `released` event at or after t.
func (c *checker) releasedAfter(id string, t time.Time) (Event, bool) {
	for _, e := range c.run.Events {
		if e.Event == EventReleased && e.Identity == id && !e.T.Before(t) {
			return e, true
		}
	}
	return Event{}, false
}

// anyLeaderAt returns a belief interval covering t.
func (c *checker) anyLeaderAt(t time.Time) (Interval, bool) {
	for _, iv := range c.ivs {
		if iv.contains(t) && iv.End.After(t) {
			return iv, true
		}
	}
	return Interval{}, false
}

// ContendWindow is how long before a run's end the harness samples each
// worker's storage requests for L2: two renew intervals or polls (whichever
// is longer) plus a second, so a contending worker certainly touches
// storage in it.
func ContendWindow(p Params) time.Duration {
	return 2*max(p.RenewInterval, p.RetryPeriod) + time.Second
}

// checkContending is L2: every worker alive at run end still contends (polls
// for the lease or leads); one that stopped has given up. The sample window
// (ContendWindow, ending at the run's end) holds two requests of a worker
// the machine runs when it is due, with a second to spare: a worker seen
// idle while the CPU probe measured at least one period and that second of
// stall in the window may only have been starved, and is inconclusive
// (stall.go).
func (c *checker) checkContending() {
	last := map[string]Event{}
	for _, e := range c.run.Events {
		last[e.Identity] = e
	}
	window := ContendWindow(c.p)
	starved := max(c.p.RenewInterval, c.p.RetryPeriod) + time.Second
	for _, w := range c.run.Workers {
		if !w.Alive || w.Contending {
			continue
		}
		from := c.end.Add(-window)
		// Got − Due is the stall it takes to hide both requests.
		b := timing{From: from, Due: c.end.Add(-starved), Got: c.end}
		c.overrun(InvL2, placed(c.end, w.Identity), b, []Event{last[w.Identity]}, "worker %s is alive but no longer contends for the lease at run end (%s): no storage request in the last %v",
			w.Identity, c.rel(c.end), window)
	}
}
