package election

import (
	"context"
	"errors"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// won is a leadership just acquired: its term (written under its lease), its
// lease ID, and when it lapses without a renew.
type won struct {
	term       int64
	leaseID    string
	validUntil time.Time
}

// follow polls for the lease every P (jittered) until it wins it and stamps
// a new term; ok is false when ctx ended.
func (e *Elector) follow(ctx context.Context, pause time.Duration) (w won, ok bool) {
	f := &following{e: e, ctx: ctx, leaseID: newLeaseID()}
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return won{}, false
		case <-timer.C:
		}
		if next, skip := f.inspect(); skip {
			timer.Reset(next) // held or breaking: no acquire (takeover.go)
			continue
		}
		if w, ok := f.poll(); ok {
			return w, true
		}
		if ctx.Err() != nil {
			return won{}, false
		}
		timer.Reset(e.cfg.JitteredRetryPeriod())
	}
}

// following is what a follower keeps between its polls. Its methods are
// the steps of a poll; only follow's goroutine calls them.
type following struct {
	e   *Elector
	ctx context.Context // Run's context
	// leaseID is this leadership attempt's: kept while an acquire's answer
	// may have been lost (retrying with it re-acquires our own ghost
	// lease), and replaced once a request with it may still be in flight
	// after we gave the lease up.
	leaseID   string
	heldPolls int   // consecutive polls that found the lock held
	watch     watch // early takeover's reads (takeover.go)
}

// poll tries once to take the lease (docs/architecture.md#the-election,
// follower), and says whether it was won and stamped with a new term.
func (f *following) poll() (w won, ok bool) {
	e := f.e
	// The send time bounds the lease from below: storage grants it at or
	// after `sent`, so it lasts past sent + L.
	sent := time.Now()
	err := e.call(f.ctx, func(c context.Context) error { return e.lock.Acquire(c, f.leaseID, e.cfg.LeaseDuration) })
	f.watch.unsure = err != nil && !errors.Is(err, lease.ErrHeld)
	switch {
	case f.ctx.Err() != nil:
		// Stopping. Unless storage definitely said no, the lease may be
		// ours — won just as we stop, or granted with the answer cut off
		// by the cancel — so release it as this attempt's lease ID (a
		// no-op at storage if it was never granted): a granted lease left
		// behind would make everyone wait L.
		if !errors.Is(err, lease.ErrHeld) {
			f.release()
		}
	case err == nil:
		e.touch(true)
		return f.stamp(sent)
	case errors.Is(err, lease.ErrHeld):
		e.touch(true)
		e.noteLeaseState(heldState(err))
		f.held()
	default:
		e.touch(false)
		e.emit(Event{Kind: EventAcquireFailed, Reason: err.Error()})
		e.log.Debug("acquire failed (transient)", "err", err)
		f.heldPolls = 0
	}
	return won{}, false
}

// stamp becomes leader of the lease just won (acquired at sent): it
// stamps a new term under the lease, the fencing token. When that fails,
// the lease is released (unless it is already lost) and the next attempt
// gets a new lease ID.
func (f *following) stamp(sent time.Time) (w won, ok bool) {
	e := f.e
	term, err := e.stampTerm(f.ctx, f.leaseID, sent)
	if err == nil {
		return won{term: term, leaseID: f.leaseID, validUntil: sent.Add(e.cfg.RenewDeadline)}, true
	}
	if e.tellUnusable(err) {
		e.emit(Event{Kind: EventAcquireFailed, Reason: "term write: " + err.Error()})
		e.log.Warn("acquired the lease but could not start leading; releasing", "err", err)
	}
	if !errors.Is(err, lease.ErrLost) {
		f.release()
	}
	f.leaseID = newLeaseID() // the release may yet arrive late
	f.heldPolls = 0
	return won{}, false
}

// held is a poll that found someone leading. It reads who (not every poll:
// it costs an operation), but every poll while we know nobody — the winner
// may not have stamped its term yet when we first look, or its holder has
// stopped confirming it — or suspect a conflicting set-up.
func (f *following) held() {
	e := f.e
	if f.heldPolls%e.cfg.ObserveEvery == 0 || e.knownLeader() == "" || e.suspecting() || e.confirmDue(time.Now()) {
		e.observe(f.ctx)
	}
	f.heldPolls++
}

// release gives up a lease this attempt may hold, as its lease ID, on a
// context that outlives Run's (a no-op at storage if it holds none).
func (f *following) release() {
	e := f.e
	_ = e.call(context.WithoutCancel(f.ctx), func(c context.Context) error { return e.lock.Release(c, f.leaseID) })
}

// stampTerm writes the new term under the lease just won: NextTerm of the
// stored one, every term this process has seen or led, and the lock's term
// floor (the record may be older than the newest leadership: storage rolled
// back).
func (e *Elector) stampTerm(ctx context.Context, leaseID string, sent time.Time) (int64, error) {
	var rec lease.Record
	if err := e.call(ctx, func(c context.Context) (err error) { rec, err = e.lock.Get(c); return err }); err != nil {
		e.noteRecord(err)
		return 0, err
	}
	e.mu.Lock()
	highest := e.highest
	e.mu.Unlock()
	term, err := NextTerm(rec.Term, highest, e.lock.TermFloor())
	e.noteRecord(err)
	if err != nil {
		return 0, err
	}
	next := lease.Record{Holder: e.cfg.Identity, Term: term, Acquired: time.Now().UTC(), Mode: e.cfg.Mode, Process: thisProcess}
	e.publishContract(&next) // heartbeat 0: early takeover covers us from the term write (takeover.go)
	err = e.call(ctx, func(c context.Context) error { return e.lock.Update(c, leaseID, next) })
	e.mu.Lock()
	switch {
	case errors.Is(err, lease.ErrRejected):
		e.rejected = "storage refuses our term write: " + err.Error()
	case err == nil:
		e.rejected = ""
	}
	e.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if err := e.stillLeased(ctx); err != nil {
		return 0, err
	}
	// Slow storage can eat the whole deadline before we start; then we have
	// nothing left to lead with.
	if !time.Now().Before(sent.Add(e.cfg.RenewDeadline)) {
		return 0, errors.New("renew deadline passed while acquiring")
	}
	return next.Term, nil
}

func (e *Elector) knownLeader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seenBy
}

// observe reads who leads from the record. A record that names us while we
// follow is stale — the new holder has not stamped its term yet — so it
// tells us nobody: we keep asking on every poll until the holder has written.
func (e *Elector) observe(ctx context.Context) {
	var rec lease.Record
	err := e.call(ctx, func(c context.Context) (err error) { rec, err = e.lock.Get(c); return err })
	e.noteRecord(err)
	if err != nil {
		e.log.Debug("could not read the leader record", "err", err)
		return
	}
	e.observeRecord(rec)
}

// observeRecord applies a record read while following, of a lease someone
// else holds. A record whose holder no longer confirms it names nobody.
func (e *Elector) observeRecord(rec lease.Record) {
	now := time.Now()
	stale := e.noteConfirm(rec, now)
	e.checkSetup(rec, stale, now)
	stamped := rec.Holder != "" // a term someone led (not a bare floor)
	if rec.Holder == e.cfg.Identity || stale {
		rec.Holder = ""
	}
	e.mu.Lock()
	if stamped {
		e.noteTerm(rec.Term)
	}
	changed := rec.Holder != "" && (rec.Holder != e.seenBy || rec.Term != e.seenTerm)
	if rec.Holder == "" {
		e.seenBy = ""
	} else if changed {
		e.seenBy, e.seenTerm = rec.Holder, rec.Term
	}
	if rec.Holder != "" {
		e.confirmed = time.Now()
	}
	e.mu.Unlock()
	if changed {
		e.emit(Event{Kind: EventObservedLeader, Term: rec.Term, Leader: rec.Holder})
		e.log.Info("observed leader", "leader", rec.Holder, "term", rec.Term)
		if e.cb.OnNewLeader != nil {
			e.cb.OnNewLeader(rec.Holder, rec.Term)
		}
	}
}

// noteRecord sets or clears the unusable-record state from the outcome of a
// read of the lock's record: a lease.ErrUnusableRecord sets it, and forgets the
// leader we knew (nobody can lead on that record); a good read clears it; a
// transient failure says nothing either way.
func (e *Elector) noteRecord(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case errors.Is(err, lease.ErrUnusableRecord):
		e.unusable = "cannot lead: " + err.Error() + " — an operator must set the lock's term (docs/operations.md#recovering-the-term)"
		e.seenBy = ""
	case err == nil:
		if e.unusable != "" {
			e.toldAt = time.Time{}
		}
		e.unusable = ""
	}
}

// tellUnusable reports whether a failed term stamp should be logged and
// emitted now: always for other errors, but for an unusable record once per
// LeaseDuration, not once per poll.
func (e *Elector) tellUnusable(err error) bool {
	if !errors.Is(err, lease.ErrUnusableRecord) {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if now := time.Now(); e.toldAt.IsZero() || now.Sub(e.toldAt) >= e.cfg.LeaseDuration {
		e.toldAt = now
		return true
	}
	return false
}
