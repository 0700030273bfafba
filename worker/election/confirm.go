package election

import (
	"errors"
	"strings"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// Confirmation (docs/architecture.md#conflicting-set-ups, kind foreign). A
// lease can be held by someone outside the election — an operator's
// `az storage blob lease acquire` with its own lease ID, renewed by a
// script — who never writes the lock's record: the record still names the
// last leader, and every follower would name it as leader for as long as
// the tool holds on, while that worker itself says it follows. So a leader
// confirms its record: with early takeover off and ConfirmEvery set, it
// writes its heartbeat under its lease at least every ConfirmEvery and
// publishes in the record how often at the latest (confirmGap, the record's
// BeatEvery; early takeover's heartbeat does the same every renew). A
// follower that reads the same holder, term and heartbeat for longer than
// that promise names nobody as leader, and once that has lasted
// conflictAfter it reports a conflict of kind foreign. A record without
// the promise (a leader that does not confirm: an older version, or
// ConfirmEvery 0) is never judged.

// conflictForeign: the lease is held by someone outside the election.
const conflictForeign = "foreign"

// confirmGap is the longest a confirming leader goes between two
// confirmations that land: ConfirmEvery, then the next renew, then the
// renew and the write, each up to the request timeout.
func (c Config) confirmGap() time.Duration {
	return c.ConfirmEvery + c.RenewInterval + 2*c.RequestTimeout()
}

// contract is what a leader publishes with every record it writes: the
// longest it goes between two heartbeats, and how long after a renew's send
// everything it started has stopped. Early takeover publishes both (a
// follower may break it); a confirming leader only the first (nobody breaks
// it early: breakTerms needs both); otherwise nothing.
func (e *Elector) contract() (beatEvery, stopWithin time.Duration) {
	switch {
	case e.cfg.takeoverEnabled():
		return e.cfg.beatGap(), e.cfg.stopWithin()
	case e.cfg.ConfirmEvery > 0:
		return e.cfg.confirmGap(), 0
	}
	return 0, 0
}

// beatDue reports whether the renew sent at sent is followed by a heartbeat
// write: every renew with early takeover, every ConfirmEvery when
// confirming.
func (l *leadership) beatDue(sent time.Time) bool {
	cfg := l.e.cfg
	return cfg.takeoverEnabled() || cfg.ConfirmEvery > 0 && sent.Sub(l.lastBeat) >= cfg.ConfirmEvery
}

// confirmWatch is what a follower knows of the holder's confirmations.
// e.mu guards it.
type confirmWatch struct {
	key     beatKey       // the holder, term and heartbeat last read
	since   time.Time     // when the first read that showed key answered
	promise time.Duration // how long key may last: the holder's BeatEvery, plus a read and the clock margin
	stale   bool          // key has outlasted the promise
	state   string        // the lease state the last held poll read ("leased", "breaking")
}

// noteConfirm notes a record of a lease someone else holds, read at now,
// and reports whether its holder has failed to confirm it for longer than
// it promised (plus a request timeout, the read's own time, and the clock
// margin early takeover keeps). The same holder, term and heartbeat in two
// reads means no confirmation landed between them: the counter only grows,
// and a new leadership writes a new term.
func (e *Elector) noteConfirm(rec lease.Record, now time.Time) (stale bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := &e.confirm
	k := beatKey{holder: rec.Holder, term: rec.Term, beat: rec.Heartbeat}
	if rec.BeatEvery <= 0 || rec.Holder == "" {
		w.key, w.since, w.promise, w.stale = beatKey{}, time.Time{}, 0, false
		return false
	}
	w.promise = rec.BeatEvery + e.cfg.RequestTimeout() + takeoverMargin
	if k != w.key || w.since.IsZero() {
		w.key, w.since, w.stale = k, now, false
		return false
	}
	w.stale = now.Sub(w.since) > w.promise
	return w.stale
}

// confirmDue reports whether the record must be read at this poll: its
// holder has outlasted its promise, or will have by now if it still shows
// the same heartbeat (so a holder that stopped confirming is found one poll
// after its promise ran out, not up to ObserveEvery polls later).
func (e *Elector) confirmDue(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := &e.confirm
	return w.stale || !w.since.IsZero() && now.Sub(w.since) > w.promise
}

// noteLeaseState remembers the lease state a held poll saw, for the
// foreign conflict's report: from an early-takeover read, or from the code
// of the acquire storage refused.
func (e *Elector) noteLeaseState(state string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.confirm.state = state
}

// heldState is the lease state an acquire refused with err says.
func heldState(err error) string {
	var se lease.StorageError
	if errors.As(err, &se) {
		_, _, code, _ := se.StorageAnswer()
		if strings.Contains(code, "Breaking") {
			return string(lease.Breaking)
		}
	}
	return string(lease.Leased)
}
