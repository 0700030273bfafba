package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// Early takeover (docs/failover.md#early-takeover): a leader that heartbeats
// under its lease is replaced about TakeoverAfter after its host dies,
// instead of a lease duration.
//
//  1. The leader, every renew interval, renews and writes a heartbeat into
//     the lock's record under its lease: a counter, how often it beats, and how
//     long after the send of a write of its record that landed everything
//     it started has stopped (StopAfterWrite = D + request timeout +
//     StopAfterDeadline). Every such write changes the record's version.
//  2. Its belief rests on those writes: leadership lasts until D after the
//     send of its last successful renew and D after the send of its last
//     heartbeat that landed, whichever is earlier (lead.go). A renew whose
//     heartbeat did not land extends nothing: followers cannot see it.
//  3. A follower polls with one read (Inspect): lease state and record. It
//     acquires only when the lease is free (available, expired, broken).
//  4. A follower that reads the same version for long enough — measured on
//     its own monotonic clock from the answer of the first read that showed
//     it to the send of the current read — breaks the lease with period 0,
//     conditioned on that version (lease.View.Version). Long enough is the
//     holder's published StopAfterWrite + takeoverMargin (and at least
//     TakeoverAfter and the holder's heartbeat gap).
//
// Why this is safe: storage acts on the break only if the record is still
// at the version the follower first read, so no write of the holder landed
// since that read was served; the holder's last landed write was therefore
// sent before the follower saw its answer, and the holder stopped (belief,
// task, a request in flight) StopAfterWrite after that send — before the
// break. A break with period 0 ends the lease at once: after it, storage
// refuses the holder's renews and lease-guarded writes (a heartbeat, or the
// next holder's term write still in flight), and a new leader can acquire.
// A break decided on a record that has since changed — delivered late, or
// landing after the next leader's term write — is refused (412).

// EventLeaseBroken is the history event of a follower that broke a lease
// whose record it found unchanged for long enough (additive to the history
// contract, docs/architecture.md).
const EventLeaseBroken EventKind = "lease_broken"

// takeoverMargin is what a breaker waits beyond the holder's StopAfterWrite:
// room for the holder's and the breaker's clocks to run at different rates
// (safety needs them within takeoverMargin/(StopAfterWrite+takeoverMargin)
// of each other: 11 % on the fast profile).
const takeoverMargin = 250 * time.Millisecond

// free reports whether an acquire can succeed on a lease in state s.
func free(s lease.State) bool {
	return s == lease.Available || s == lease.Expired || s == lease.Broken
}

// takeoverEnabled reports whether early takeover is on.
func (c Config) takeoverEnabled() bool { return c.TakeoverAfter > 0 }

// beatGap is the longest a healthy leader goes between two heartbeats that
// land: a renew interval, then a renew and a heartbeat that each take up to
// the request timeout. A heartbeating leader publishes it.
func (c Config) beatGap() time.Duration { return c.RenewInterval + 2*c.RequestTimeout() }

// stopAfterWrite is what a heartbeating leader publishes: how long after the
// send of a write of its record that landed everything it started has
// stopped acting — its belief (D), a request it had in flight (the request
// timeout), and whatever outlives its deadline (StopAfterDeadline).
func (c Config) stopAfterWrite() time.Duration {
	return c.RenewDeadline + c.RequestTimeout() + c.StopAfterDeadline
}

// minTakeoverAfter is the shortest TakeoverAfter the rules allow: what a
// breaker would wait for this config's own leadership anyway.
func (c Config) minTakeoverAfter() time.Duration {
	return max(2*c.RenewInterval, c.beatGap(), c.stopAfterWrite()+takeoverMargin)
}

func (c Config) validateTakeover() error {
	const leaseDuration, renewDeadline, renewInterval = fieldRef("LeaseDuration"), fieldRef("RenewDeadline"), fieldRef("RenewInterval")
	switch {
	case c.StopAfterDeadline < 0:
		return invalid("StopAfterDeadline", c.StopAfterDeadline, "must be ≥ 0")
	case c.TakeoverAfter < 0:
		return invalid("TakeoverAfter", c.TakeoverAfter, "must be ≥ 0 (0: early takeover off)")
	case c.TakeoverAfter == 0:
		return nil
	case c.TakeoverAfter < c.minTakeoverAfter():
		return invalid("TakeoverAfter", c.TakeoverAfter, "must be at least %s + request timeout%s + %s (%s), so the holder has stopped before the break, and at least 2 × %s and %s + 2 × request timeout, so a healthy leader's heartbeat is never found stale",
			renewDeadline, stopAfterText(c), takeoverMargin, c.minTakeoverAfter(), renewInterval, renewInterval)
	case c.TakeoverAfter >= c.LeaseDuration:
		return invalid("TakeoverAfter", c.TakeoverAfter, "must be less than %s (%s): by then the lease has expired and no break is needed", leaseDuration, c.LeaseDuration)
	}
	return nil
}

func stopAfterText(c Config) string {
	if c.StopAfterDeadline == 0 {
		return ""
	}
	return fmt.Sprintf(" + %s after the deadline", c.StopAfterDeadline)
}

// publishContract adds the leader's contract (contract) to a record about
// to be written, with heartbeat 0 (the term write): a leader that dies
// before its first heartbeat can then be broken early, or found silent, too.
func (e *Elector) publishContract(r *lease.Record) {
	if beat, stop := e.contract(); beat > 0 {
		r.Heartbeat, r.BeatEvery, r.StopAfterWrite = 0, beat, stop
	}
}

// heartbeatRecord is what a leader writes with heartbeat n.
func (l *leadership) heartbeatRecord(n int64) lease.Record {
	e := l.e
	e.mu.Lock()
	acquired := e.since
	e.mu.Unlock()
	r := lease.Record{Holder: e.cfg.Identity, Term: l.term, Acquired: acquired.UTC(), Mode: e.cfg.Mode, Process: thisProcess}
	e.publishContract(&r)
	r.Heartbeat = n
	return r
}

// renewAndBeat is one renew cycle started at sent: the renew and, when
// withBeat (beatDue: every cycle with early takeover, every ConfirmEvery
// when confirming), the heartbeat under the lease, side by side, each
// ending by end (renewal.Machine's rule: the send + the request timeout,
// but never past the deadline of the leadership it extends). Side by side, a cycle takes one round
// trip, not two: on slow storage a heartbeat that times out does not hold
// the next one back behind a renew, and the belief it earns counts from the
// cycle's start. The heartbeat's answer goes out as soon as it comes; the
// cycle's last answer (final) carries the renew's and repeats the
// heartbeat's, for its event. A heartbeat that storage refuses for our lease
// is a definite loss; any other failed heartbeat leaves the belief where it
// was (renewResult.beatErr), and the renew still keeps the lease.
func (l *leadership) renewAndBeat(ctx context.Context, sent, end time.Time, withBeat bool, out chan<- renewResult) {
	e := l.e
	renewed := make(chan renewResult, 1)
	go func() {
		r := renewResult{final: true, sent: time.Now()}
		c, cancel := context.WithDeadline(ctx, end)
		defer cancel()
		r.err = e.lock.Renew(c, l.leaseID)
		e.noteAnswer(ctx, r.err)
		renewed <- r
	}()
	var beat renewResult
	if withBeat {
		beat = l.beat(ctx, sent, end)
		if beat.err == nil {
			out <- beat
		}
	}
	r := <-renewed
	r.beatSent, r.beat = beat.beatSent, beat.beat
	if beat.err != nil {
		r.err = beat.err // a definite loss, whatever the renew said
	}
	out <- r
}

// beat writes one heartbeat (sent at sent, not past end). Its answer: the
// heartbeat landed (beatSent, beat), failed (beatErr), or the lease is
// definitely lost (err).
func (l *leadership) beat(ctx context.Context, sent, end time.Time) renewResult {
	e := l.e
	l.beats++
	c, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	err := e.lock.Update(c, l.leaseID, l.heartbeatRecord(l.beats))
	e.noteAnswer(ctx, err)
	switch {
	case err == nil:
		return renewResult{beatSent: sent, beat: l.beats}
	case errors.Is(err, lease.ErrLost):
		return renewResult{err: err}
	}
	return renewResult{beatErr: err}
}

// watch is what a follower remembers between its reads for early takeover.
type watch struct {
	seen  lease.View // the last read that showed a version we are measuring
	since time.Time  // answer of the first read that showed seen.Version; zero: nothing to measure from
	// refused: the version of a holder we said we will not break (logged once).
	refused string
	// unsure: our last acquire got no definite answer. It may have taken the
	// lease (a lost response), so the next poll retries it with the same
	// lease ID (docs/failover.md#stale-requests-one-lease-id-per-leadership)
	// instead of reading a lease that may be our own ghost.
	unsure bool
}

// restart forgets the version seen: staleness is measured again from the
// next read.
func (w *watch) restart() { w.seen, w.since = lease.View{}, time.Time{} }

// inspect reads the lock once (step 3). skip says the acquire must not be
// tried (the lease is held, or breaking); next is when to read again. With
// early takeover off, or when the read fails, it leaves the poll to the
// acquire (skip false); after a break it broke, too.
func (f *following) inspect() (next time.Duration, skip bool) {
	e, w := f.e, &f.watch
	if !e.cfg.takeoverEnabled() || w.unsure {
		return 0, false
	}
	br := e.lock.(lease.Breaker) // NewElector checked
	sent := time.Now()
	var v lease.View
	err := e.call(f.ctx, func(c context.Context) (err error) { v, err = br.Inspect(c); return err })
	answered := time.Now()
	if errors.Is(err, lease.ErrUnusableRecord) {
		e.touch(true) // a definite answer: the record is there, and unusable
		e.noteRecord(err)
	}
	if err != nil || free(v.State) {
		// Staleness is measured only across our own consecutive reads: a
		// failed read (or a free lease) starts the measurement again.
		w.restart()
		if err != nil {
			e.log.Debug("could not read the lease", "err", err)
		}
		return 0, false
	}
	e.touch(true)
	if v.Record.Holder != "" {
		e.noteLeaseState(string(v.State))
		e.observeRecord(v.Record)
	}
	if v.State == lease.Breaking {
		// Someone broke it with a period (an operator: ours have none).
		// Nobody can acquire before it ends; we do not break again.
		w.restart()
		return e.cfg.JitteredRetryPeriod(), true
	}
	return f.judge(br, v, sent, answered)
}

// judge is step 4 for a read (sent and answered at those times) of a
// leased lock: it notes the record's version, and once the version has
// stayed the same, by our own clock, for as long as the holder's contract
// asks, breaks the lease conditioned on it. It says when to read again, or
// (skip false) that the lease is broken and the acquire goes next.
func (f *following) judge(br lease.Breaker, v lease.View, sent, answered time.Time) (next time.Duration, skip bool) {
	e, w := f.e, &f.watch
	need, why := e.breakAfter(v.Record)
	if w.since.IsZero() || v.Version != w.seen.Version {
		w.seen, w.since = v, answered
		return f.nextRead(need), true
	}
	// Unchanged: for how long, by our own clock, at the least?
	stale := sent.Sub(w.since)
	switch {
	case why != "":
		if w.refused != v.Version {
			w.refused = v.Version
			e.log.Debug("will not break this holder early", "holder", v.Record.Holder, "term", v.Record.Term, "why", why)
		}
		return e.cfg.JitteredRetryPeriod(), true
	case stale < need:
		return f.nextRead(need), true
	case v.Version == "":
		return e.cfg.JitteredRetryPeriod(), true // nothing to condition a break on: never break blindly
	}
	// Break only the leadership this read judged: once its record changed
	// (a heartbeat, a later leadership's term), storage refuses the break.
	err := e.call(f.ctx, func(c context.Context) error { return br.Break(c, v.Version, 0) })
	if err != nil {
		// Refused (412: the record moved after all) or no answer (it may
		// have landed): the next read tells which — a new version starts
		// the measurement again, the same one is judged again, a broken
		// lease is acquired.
		e.log.Info("could not break a stale lease", "holder", v.Record.Holder, "term", v.Record.Term, "err", err)
		return f.nextRead(0), true
	}
	r := v.Record
	w.restart()
	reason := fmt.Sprintf("record of %s (term %d, heartbeat %d) unchanged for %s ≥ %s", r.Holder, r.Term, r.Heartbeat, stale.Round(time.Millisecond), need)
	e.emit(Event{Kind: EventLeaseBroken, Term: r.Term, Leader: r.Holder, Reason: reason, Heartbeat: r.Heartbeat, Stale: stale})
	e.log.Info("broke a stale lease", "holder", r.Holder, "term", r.Term, "heartbeat", r.Heartbeat, "stale", stale.Round(time.Millisecond), "need", need)
	return 0, false
}

// nextRead is when to read again while measuring: at the next poll, or
// exactly when the version we measure has been unchanged for need, if
// that comes first — the break is then decided on time, not up to a poll
// late.
func (f *following) nextRead(need time.Duration) time.Duration {
	p := f.e.cfg.JitteredRetryPeriod()
	if need <= 0 {
		return p
	}
	return max(0, min(p, time.Until(f.watch.since.Add(need))))
}

// breakAfter says how long a holder's record must stay unchanged before we
// break its lease; why is non-empty when we must not break it at all. It
// comes from what the holder published — its heartbeat gap and its stop
// horizon — so a follower configured shorter than the holder (a rolling
// change of --renew-deadline or --kill-grace) never breaks it too early;
// our own TakeoverAfter can only make it longer.
func (e *Elector) breakAfter(r lease.Record) (need time.Duration, why string) {
	if r.BeatEvery <= 0 || r.StopAfterWrite <= 0 {
		return 0, "the holder publishes no heartbeat contract (early takeover off on it)"
	}
	safe := max(e.cfg.TakeoverAfter, r.BeatEvery, r.StopAfterWrite+takeoverMargin)
	return e.cfg.claim.breakAfter(safe, r), ""
}
