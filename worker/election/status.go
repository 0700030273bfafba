package election

import (
	"errors"
	"fmt"
	"time"
)

// Role is what an elector is doing at the moment of asking.
type Role string

const (
	RoleLeader   Role = "leader"
	RoleFollower Role = "follower"
	RoleStopping Role = "stopping"
)

// Status is a snapshot of the elector, with the role computed against the
// renew deadline at the moment of asking.
type Status struct {
	Identity   string
	Role       Role
	Term       int64     // the term we lead, or the last term observed
	Leader     string    // the known leader's identity; empty if unknown; never us unless we lead
	Since      time.Time // when the current role began
	ValidUntil time.Time // while leading: when leadership lapses without a renew
	// LeaderConfirmed is when storage last confirmed Leader: while we lead,
	// the send of our last successful renew (or our acquire); else the last
	// read of the lock's record that named it (a follower reads it on its
	// first held poll, then every ObserveEvery polls). Zero when Leader is
	// empty.
	LeaderConfirmed time.Time
	// Unusable says why this contender cannot lead whatever it wins (the
	// lock's record cannot give a next term; see lease.ErrUnusableRecord); empty
	// otherwise.
	Unusable string
	// Conflict says how this contender's set-up conflicts with another's
	// (conflict.go: another process under its identity, a contender of
	// another Mode), once every read for L + 2·P·1.1 + 2 request timeouts
	// has shown it; empty otherwise.
	Conflict string
	// Starting is true until storage has given this elector its first
	// definite answer (Ready says "no answer from storage yet" meanwhile):
	// start-up, such as a token or a role assignment still on its way, is
	// readiness, never a failure of Healthy.
	Starting bool
}

// IsLeader reports whether we lead right now: leadership is checked against
// the renew deadline at the moment of asking, so a process resumed after a
// pause never claims a leadership that has already lapsed.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.isLeaderLocked(time.Now())
}

func (e *Elector) isLeaderLocked(now time.Time) bool {
	return e.leading && now.Before(e.deadline)
}

// Status returns a snapshot; see Status.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	s := Status{Identity: e.cfg.Identity, Role: RoleFollower, Term: e.seenTerm, Leader: e.seenBy, Since: e.since, Unusable: e.unusable,
		Conflict: e.setup.reason, Starting: e.lastReply.IsZero()}
	switch {
	case e.stopping:
		s.Role = RoleStopping
	case e.isLeaderLocked(now):
		s.Role, s.Term, s.Leader = RoleLeader, e.ledTerm, e.cfg.Identity
		s.ValidUntil = e.cfg.claim.reported(e.deadline)
	case e.leading:
		// The deadline passed and the loop has not noticed yet (paused, or a
		// renew still hanging): we do not lead and cannot know who does.
		s.Term, s.Leader, s.Since = e.ledTerm, "", e.deadline
	}
	if s.Leader != "" {
		s.LeaderConfirmed = e.confirmed
	}
	return s
}

// Healthy returns nil unless the election loop or a leading task is wedged,
// or storage keeps refusing our term write (see lease.ErrRejected): what
// liveness reports. A record nobody can lead on, a conflicting set-up, or
// storage that has not answered as expected since the start are not cured
// by restarting this process; Ready reports those.
func (e *Elector) Healthy() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wedged != "" {
		return errors.New(e.wedged)
	}
	if e.rejected != "" {
		return errors.New(e.rejected)
	}
	// The loop touches lastLoop at least every max(P, renew interval) plus one
	// request timeout, and not during a backoff (handOffPause); a full lease
	// duration without progress beyond that means it is stuck.
	if idle := time.Since(later(e.lastLoop, e.backoffUntil)); e.running && idle > e.cfg.LeaseDuration {
		return fmt.Errorf("election loop made no progress for %s", idle.Round(time.Millisecond))
	}
	if idle := time.Since(e.lastProgress); e.cfg.WatchdogTimeout > 0 && e.isLeaderLocked(time.Now()) && idle > e.cfg.WatchdogTimeout {
		return fmt.Errorf("leader task of term %d made no progress for %s (the watchdog steps it down)", e.ledTerm, idle.Round(time.Millisecond))
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Ready reports whether the elector is running, has had a definite answer
// from storage within the last lease duration, and can lead if it wins: not
// on a record nobody can lead on, nor beside a conflicting set-up.
func (e *Elector) Ready() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case !e.running:
		return errors.New("election loop not running")
	case e.rejected != "":
		return errors.New(e.rejected)
	case e.unusable != "":
		return errors.New(e.unusable)
	case e.setup.reason != "":
		return errors.New(e.setup.reason)
	case time.Now().Before(e.backoffUntil):
		return fmt.Errorf("backing off for %s after %d leadership(s) in a row whose task made no progress", time.Until(e.backoffUntil).Round(time.Millisecond), e.stalls)
	case e.lastReply.IsZero():
		return noAnswer("yet", e.answers.lastUnexpected(time.Now()))
	case time.Since(e.lastReply) > e.cfg.LeaseDuration:
		return noAnswer("for "+time.Since(e.lastReply).Round(time.Millisecond).String(), e.answers.lastUnexpected(time.Now()))
	}
	return nil
}

// noAnswer is Ready's reason for no answer from storage `when`, naming the
// last unexpected answer if one came: storage may well have answered, just
// not as the election expects.
func noAnswer(when, last string) error {
	if last == "" {
		return errors.New("no answer from storage " + when)
	}
	return fmt.Errorf("no expected answer from storage %s; the last unexpected answer: %s", when, last)
}
