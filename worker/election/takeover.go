package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// Early takeover (docs/failover.md#early-takeover): a leader that heartbeats
// under its lease can be replaced in T + B instead of L after its host dies.
//
//  1. The leader, after every successful renew, writes a heartbeat into the
//     lock's record under its lease: a counter, how often it beats, and how
//     long after a renew's send everything it started has stopped
//     (StopWithin = D + request timeout + StopAfterDeadline).
//  2. A follower polls with one read (Inspect): lease state and record. It
//     acquires only when the lease is free (available, expired, broken).
//  3. A follower that reads the same holder, term and heartbeat for T, with
//     T measured on its own monotonic clock from the answer of the first read
//     that showed them to the send of the current read, breaks the lease
//     with a break period B ≥ StopWithin + takeoverMargin + breakRounding
//     (StopWithin as the holder published it), conditioned on the read that
//     judged it (lease.View.Version): storage refuses the break once the
//     record changed — a heartbeat landed, or a later leadership wrote its
//     term — so a break delivered late never ends a leadership nobody judged.
//     It reads again once B has passed.
//  4. A new leader with early takeover on reads the lease once more after
//     its term write: a break aimed at the previous leadership that landed
//     between its acquire and its term write (the record was still the
//     previous one's) leaves it breaking, and the new leader gives the lease
//     up before it starts anything.
//
// Why this is safe: every renew that succeeded reached storage before the
// break did (a breaking lease cannot be renewed), so it was sent before the
// break; the holder stops by that send + D and everything it started by
// StopWithin after it, which is before the break ends. Nothing here relies
// on what storage does with a second, shorter break: every break a follower
// sends satisfies the rule on its own.

// EventLeaseBroken is the history event of a follower that broke a lease
// whose heartbeat it found stale (additive to the history contract,
// docs/architecture.md).
const EventLeaseBroken EventKind = "lease_broken"

const (
	// takeoverMargin is what BreakPeriod keeps above the holder's
	// StopWithin: room for clock-rate drift between the holder and storage
	// (safety needs the holder's clock to run no slower than by a factor
	// StopWithin/(StopWithin + margin)).
	takeoverMargin = 500 * time.Millisecond
	// breakRounding is what BreakPeriod keeps above StopWithin +
	// takeoverMargin because storage counts break periods in whole seconds:
	// it takes the period and reports the time left in whole seconds, and
	// its documentation promises only that no lease is granted before the
	// period "has expired", not to the millisecond. A break ending up to a
	// second early must still end after the holder stopped
	// (docs/failover.md#early-takeover).
	breakRounding = time.Second
	// breakSlack is added after our break's period before reading again, so
	// storage (which counts from its own receipt) has ended it.
	breakSlack = 50 * time.Millisecond
	// breakRecheck spaces the reads while a break we sent should be over but
	// storage still reports it breaking.
	breakRecheck = 100 * time.Millisecond
)

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

// stopWithin is what a heartbeating leader publishes: how long after a
// renew's send everything it started has stopped acting.
func (c Config) stopWithin() time.Duration {
	return c.RenewDeadline + c.RequestTimeout() + c.StopAfterDeadline
}

// minBreakPeriod is the shortest break period the rule allows for this
// config: breakPeriodFor(stopWithin).
func (c Config) minBreakPeriod() time.Duration { return breakPeriodFor(c.stopWithin()) }

// breakPeriodFor is the shortest break period that covers a holder which
// stops within stop of a renew's send: stop + takeoverMargin +
// breakRounding, rounded up to whole seconds.
func breakPeriodFor(stop time.Duration) time.Duration {
	return ceilSecond(stop + takeoverMargin + breakRounding)
}

// effectiveBreakPeriod is BreakPeriod, or minBreakPeriod when it is 0.
func (c Config) effectiveBreakPeriod() time.Duration {
	if c.BreakPeriod == 0 {
		return c.minBreakPeriod()
	}
	return c.BreakPeriod
}

func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1) / time.Second * time.Second
}

func (c Config) validateTakeover() error {
	const (
		leaseDuration, renewDeadline, renewInterval = fieldRef("LeaseDuration"), fieldRef("RenewDeadline"), fieldRef("RenewInterval")
		takeoverAfter, breakPeriod                  = fieldRef("TakeoverAfter"), fieldRef("BreakPeriod")
	)
	b := c.effectiveBreakPeriod()
	switch {
	case c.StopAfterDeadline < 0:
		return invalid("StopAfterDeadline", c.StopAfterDeadline, "must be ≥ 0")
	case c.TakeoverAfter < 0:
		return invalid("TakeoverAfter", c.TakeoverAfter, "must be ≥ 0 (0: early takeover off)")
	case c.BreakPeriod < 0:
		return invalid("BreakPeriod", c.BreakPeriod, "must be ≥ 0 (0: the shortest the rule allows)")
	case c.TakeoverAfter == 0 && c.BreakPeriod != 0:
		return invalid("BreakPeriod", c.BreakPeriod, "must be 0 while %s is 0 (early takeover off)", takeoverAfter)
	case c.TakeoverAfter == 0:
		return nil
	case c.TakeoverAfter < 2*c.RenewInterval || c.TakeoverAfter < c.beatGap():
		return invalid("TakeoverAfter", c.TakeoverAfter, "must be at least 2 × %s and %s + 2 × request timeout (%s): a healthy leader on storage that answers just within the timeout writes a heartbeat at least that often", renewInterval, renewInterval, max(2*c.RenewInterval, c.beatGap()))
	case c.BreakPeriod%time.Second != 0:
		return invalid("BreakPeriod", c.BreakPeriod, "must be a whole number of seconds (storage takes break periods in seconds)")
	case b > lease.MaxBreakPeriod:
		return invalid("BreakPeriod", b, "must be at most %s (the longest break period storage accepts); %s + request timeout + %s needs %s", lease.MaxBreakPeriod, renewDeadline, takeoverMargin+breakRounding, c.minBreakPeriod())
	case b < c.minBreakPeriod():
		return invalid("BreakPeriod", c.BreakPeriod, "must be at least %s + request timeout + %s%s (%s, rounded up to whole seconds: %s of clock margin and %s because storage counts break periods in whole seconds), so the holder has stopped before anyone can acquire", renewDeadline, takeoverMargin+breakRounding, stopAfterText(c), c.minBreakPeriod(), takeoverMargin, breakRounding)
	case c.TakeoverAfter+b >= c.LeaseDuration:
		return invalid("TakeoverAfter", c.TakeoverAfter, "plus %s (%s) must be less than %s (%s): otherwise the lease expires before an early takeover could end it (lower %s to shorten the break period)", breakPeriod, b, leaseDuration, c.LeaseDuration, renewDeadline)
	}
	return nil
}

func stopAfterText(c Config) string {
	if c.StopAfterDeadline == 0 {
		return ""
	}
	return fmt.Sprintf(" + %s after the deadline", c.StopAfterDeadline)
}

// publishContract adds the early-takeover contract (or a confirming
// leader's promise, confirm.go) to a record about to be written, with
// heartbeat 0 (the term write): a leader that dies before its first renew
// can then be broken early too.
func (e *Elector) publishContract(r *lease.Record) {
	if beat, stop := e.contract(); beat > 0 {
		r.Heartbeat, r.BeatEvery, r.StopWithin = 0, beat, stop
	}
}

// errBreakingAtStart: the lease we just won is breaking. A follower's break
// aimed at the previous leadership landed between our acquire and our term
// write, while the record was still the previous leadership's.
var errBreakingAtStart = errors.New("election: the lease was broken before our term write landed (a break aimed at the previous leadership)")

// stillLeased is step 4: with early takeover on, a new leader reads the
// lease once after its term write. Every break conditioned on the previous
// record reached storage before that write (the write changed the record),
// so a lease that reads leased now can only be broken by a follower that
// judged this leadership; one that reads breaking or broken is given up
// before anything starts under it.
func (e *Elector) stillLeased(ctx context.Context) error {
	if !e.cfg.takeoverEnabled() {
		return nil
	}
	br := e.lock.(lease.Breaker) // NewElector checked
	var v lease.View
	if err := e.call(ctx, func(c context.Context) (err error) { v, err = br.Inspect(c); return err }); err != nil {
		return fmt.Errorf("read the lease after the term write: %w", err)
	}
	if v.State != lease.Leased {
		return fmt.Errorf("%w: it reads %s", errBreakingAtStart, v.State)
	}
	return nil
}

// heartbeatRecord is what a leader writes with heartbeat n.
func (l *leadership) heartbeatRecord(n int64) lease.Record {
	e := l.e
	e.mu.Lock()
	acquired := e.since
	e.mu.Unlock()
	beat, stop := e.contract()
	return lease.Record{Holder: e.cfg.Identity, Term: l.term, Acquired: acquired.UTC(), Mode: e.cfg.Mode, Process: thisProcess,
		Heartbeat: n, BeatEvery: beat, StopWithin: stop}
}

// renewAndBeat is one renew cycle: the renew, then (with early takeover on)
// the heartbeat under the lease, with a request timeout of its own but never
// past the deadline the renew just earned. A heartbeat that storage refuses
// for our lease is a definite loss; any other failed heartbeat only means
// followers may find us stale, and the cycle still counts as renewed.
func (l *leadership) renewAndBeat(ctx context.Context, sent time.Time) renewResult {
	e := l.e
	err := e.lock.Renew(ctx, l.leaseID)
	e.noteAnswer(l.renewCtx, err)
	if err != nil || !l.beatDue(sent) {
		return renewResult{sent: sent, err: err}
	}
	l.beats++
	end := time.Now().Add(e.cfg.RequestTimeout())
	if dl := sent.Add(e.cfg.RenewDeadline); dl.Before(end) {
		end = dl
	}
	c, cancel := context.WithDeadline(l.renewCtx, end)
	defer cancel()
	berr := e.lock.Update(c, l.leaseID, l.heartbeatRecord(l.beats))
	e.noteAnswer(l.renewCtx, berr)
	switch {
	case berr == nil:
		l.lastBeat = sent
		return renewResult{sent: sent, beat: l.beats}
	case errors.Is(berr, lease.ErrLost):
		return renewResult{sent: sent, err: berr}
	}
	return renewResult{sent: sent, beatErr: berr}
}

// watch is what a follower remembers between its reads for early takeover.
type watch struct {
	seen  beatKey
	since time.Time // answer of the first read that showed seen; zero: nothing to measure from
	// brokeAt is the answer to our break (zero if none pending), brokeFor
	// its period: we read again once it has passed.
	brokeAt  time.Time
	brokeFor time.Duration
	refused  beatKey // the holder we said we will not break (logged once)
	// unsure: our last acquire got no definite answer. It may have taken the
	// lease (a lost response), so the next poll retries it with the same
	// lease ID (docs/failover.md#stale-requests-one-lease-id-per-leadership)
	// instead of reading a lease that may be our own ghost.
	unsure bool
}

// restart forgets the holder seen: staleness is measured again from the
// next read.
func (w *watch) restart() { w.seen, w.since = beatKey{}, time.Time{} }

// beatKey is what must change for a heartbeat to count as fresh.
type beatKey struct {
	holder     string
	term, beat int64
}

// inspect reads the lock once (step 2). skip says the acquire must not be
// tried (the lease is held, or breaking); next is when to read again. With
// early takeover off, or when the read fails, it leaves the poll to the
// acquire (skip false).
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
		w.brokeAt = time.Time{}
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
		w.restart()
		return f.whileBreaking(), true
	}
	w.brokeAt = time.Time{}
	return f.judge(br, v, sent, answered), true
}

// whileBreaking is when to read again while the lease is breaking: when
// our own break has passed (and then shortly after, until storage says it
// ended), or at the next poll for someone else's.
func (f *following) whileBreaking() time.Duration {
	e, w := f.e, &f.watch
	if w.brokeAt.IsZero() {
		return e.cfg.JitteredRetryPeriod() // someone else's break
	}
	left := time.Until(w.brokeAt.Add(w.brokeFor))
	switch {
	case left > 0:
		return left + breakSlack
	case -left < e.cfg.RetryPeriod:
		return breakRecheck
	}
	w.brokeAt = time.Time{}
	return e.cfg.JitteredRetryPeriod()
}

// judge is step 3 for a read (sent and answered at those times) of a
// leased lock: it notes the holder's heartbeat, and breaks the lease once
// the heartbeat has stayed unchanged, by our own clock, for as long as the
// holder's contract asks. It says when to read again.
func (f *following) judge(br lease.Breaker, v lease.View, sent, answered time.Time) time.Duration {
	e, w := f.e, &f.watch
	k := beatKey{holder: v.Record.Holder, term: v.Record.Term, beat: v.Record.Heartbeat}
	if w.since.IsZero() || k != w.seen {
		w.seen, w.since = k, answered
		return e.cfg.JitteredRetryPeriod()
	}
	// Unchanged: for how long, by our own clock, at the least?
	stale := sent.Sub(w.since)
	need, period, why := e.breakTerms(v.Record)
	switch {
	case why != "":
		if w.refused != k {
			w.refused = k
			e.log.Debug("will not break this holder early", "holder", k.holder, "term", k.term, "why", why)
		}
		return e.cfg.JitteredRetryPeriod()
	case stale < need:
		return e.cfg.JitteredRetryPeriod()
	case v.Version == "":
		return e.cfg.JitteredRetryPeriod() // nothing to condition a break on: never break blindly
	}
	// Break only the leadership this read judged: once its record changed
	// (a heartbeat, a later leadership's term), storage refuses the break.
	err := e.call(f.ctx, func(c context.Context) error { return br.Break(c, v.Version, period) })
	if err != nil {
		e.log.Warn("could not break a stale lease", "holder", k.holder, "term", k.term, "err", err)
		return e.cfg.JitteredRetryPeriod()
	}
	w.brokeAt, w.brokeFor = time.Now(), period
	w.restart()
	reason := fmt.Sprintf("heartbeat %d of %s (term %d) unchanged for %s ≥ %s; break period %s", k.beat, k.holder, k.term, stale.Round(time.Millisecond), need, period)
	e.emit(Event{Kind: EventLeaseBroken, Time: w.brokeAt, Term: k.term, Leader: k.holder, Reason: reason, Heartbeat: k.beat, Stale: stale, BreakPeriod: period})
	e.log.Info("broke a stale lease", "holder", k.holder, "term", k.term, "heartbeat", k.beat, "stale", stale.Round(time.Millisecond), "break_period", period)
	return period + breakSlack
}

// breakTerms says how long a holder's heartbeat must stay unchanged before
// we break its lease, and with which period; why is non-empty when we must
// not break it at all. Both come from what the holder published — its
// heartbeat gap and its stop horizon — so a follower configured shorter than
// the holder (a rolling change of --renew-deadline, --kill-grace or
// --break-period) never breaks it too early; our own settings can only make
// them longer.
func (e *Elector) breakTerms(r lease.Record) (need, period time.Duration, why string) {
	if r.BeatEvery <= 0 || r.StopWithin <= 0 {
		return 0, 0, "the holder publishes no heartbeat contract (early takeover off on it)"
	}
	need = max(e.cfg.TakeoverAfter, r.BeatEvery)
	period = max(breakPeriodFor(r.StopWithin), e.cfg.BreakPeriod)
	if period > lease.MaxBreakPeriod {
		return 0, 0, fmt.Sprintf("the holder stops within %s of a renew, more than a break period can cover", r.StopWithin)
	}
	return need, period, ""
}
