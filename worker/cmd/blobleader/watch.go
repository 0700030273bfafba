package main

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/history"
	"github.com/blobleader/blobleader/worker/supervise"
)

// watch waits for the command to exit, for leadership to end or for a
// shutdown, stops the whole group (stop, below) and says why it ended. It
// returns only once the group is reaped, or with ErrSurvived. A member out
// of reach keeps it here, reporting progress (so the lease is held), until that
// member is gone.
func (s *supervisor) watch(ctx context.Context, term int64, g *supervise.Group) (cause string, err error) {
	// The command cannot report progress to the stall watchdog; we look at
	// its group twice per renew interval (look).
	beat := time.NewTicker(max(s.n.cfg.RenewInterval/2, 10*time.Millisecond))
	defer beat.Stop()
	// A member that changes its user is found within one renew interval.
	reach := time.NewTicker(s.n.cfg.RenewInterval)
	defer reach.Stop()
	// Our own watch on the leadership's end: the command is stopped when
	// its stop is due (stopAt: the deadline, or kill-grace before it with
	// early takeover) even if the elector's cancel comes later.
	lapse := time.NewTimer(time.Hour)
	defer lapse.Stop()
	arm := func() {
		if at := s.stopAt(term); !at.IsZero() {
			lapse.Reset(time.Until(at))
		}
	}
	arm()
	shimStopped := 0 // looks in a row that found the shim stopped
	for cause == "" {
		select {
		case <-g.Exited():
			// On its own: take whatever it left behind with it.
			cause = history.CauseExited
			if g.ShimLost() {
				cause = history.CauseShimLost
				s.log.Error("the command's shim died before it reported the command's end; stopping what is left of the command and handing leadership on",
					"event", history.CauseShimLost, "term", term, "pid", g.Pid())
			}
		case <-s.quit:
			cause = history.CauseShutdown
		case <-ctx.Done():
			if shutdown, _ := s.stopping(); shutdown {
				cause = history.CauseShutdown
			} else {
				cause = history.CauseLeadershipEnded
			}
		case <-lapse.C:
			at := s.stopAt(term)
			if at.IsZero() || time.Now().Before(at) {
				arm() // renewed since: wait for the new end
				continue
			}
			// Act first, report after (the log may block).
			err = s.stop(g, term, history.CauseLeadershipEnded)
			s.log.Warn("leadership lapsed before the elector said so; stopped the command", "term", term, "kill_by", s.killAt(term).Format(time.RFC3339Nano))
			return s.settle(ctx, term, g, history.CauseLeadershipEnded, err, beat)
		case loss := <-g.GuardLost():
			// Replaced at once by the group; if it could not be, the
			// leadership is not held unguarded: stop and release.
			if s.guardLost(term, g, loss) {
				cause = history.CauseGuardLost
			}
		case <-reach.C:
			if rerr := g.CheckReach(); rerr != nil {
				s.reportOutOfReach(term, g, rerr)
			}
		case <-beat.C:
			cause = s.look(ctx, term, g, &shimStopped)
		}
	}
	err = s.stop(g, term, cause)
	return s.settle(ctx, term, g, cause, err, beat)
}

// look is the watch's look at the group, twice per renew interval: while a
// member of the command runs, that is its progress for the stall watchdog,
// and blobleader_child_running says whether one does. A shim found stopped
// at two looks in a row (SIGSTOP, a debugger) reaps and reports nothing:
// the supervisor can no longer learn of the command's end, so it stops
// believing in the command and stops it (cause shim_lost), which hands
// leadership on; so a stopped shim is noticed within one renew interval.
func (s *supervisor) look(ctx context.Context, term int64, g *supervise.Group, stoppedLooks *int) string {
	running := g.Running()
	if running {
		s.running.Set(1)
	} else {
		s.running.Set(0)
	}
	if !g.ShimStopped() {
		*stoppedLooks = 0
		if running {
			election.Progress(ctx)
			s.mu.Lock()
			s.progressed = true
			s.mu.Unlock()
		}
		return ""
	}
	if *stoppedLooks++; *stoppedLooks < 2 {
		return ""
	}
	s.log.Error("the command's shim is stopped: it can no longer report the command's end; stopping the command and handing leadership on",
		"event", history.CauseShimLost, "term", term, "pid", g.Pid(), "command_running", running)
	return history.CauseShimLost
}

// settle turns the outcome of a stop into watch's: nil once the group is
// reaped; for a member out of reach, a report and then a wait, without
// deadline, for it to be gone (reporting progress, SIGKILL again every second),
// because releasing while it may run would start a second copy.
func (s *supervisor) settle(ctx context.Context, term int64, g *supervise.Group, cause string, err error, beat *time.Ticker) (string, error) {
	if !errors.Is(err, supervise.ErrOutOfReach) {
		return cause, err
	}
	s.reportOutOfReach(term, g, err)
	again := time.NewTicker(time.Second)
	defer again.Stop()
	for {
		select {
		case <-g.Done():
			return cause, nil
		case <-again.C:
			_ = g.Signal(syscall.SIGKILL)
		case loss := <-g.GuardLost():
			s.guardLost(term, g, loss)
		case <-beat.C:
			election.Progress(ctx)
		}
	}
}

// The kill-grace policy, in one place (docs/failover.md#commands-under-blobleader-run): how a
// group is stopped for each cause, and by when the guard kills it if the
// supervisor cannot.
//
// The command must be dead before anyone else can start one. Without early
// takeover that is before the lease can expire, L after the last renew: the
// command is stopped at the end of its leadership v, SIGKILLed at
// v + kill-grace and reaped by v + kill-grace + KillTimeout ≤ the last
// renew's send + L − safety margin (validateRun). With early takeover a
// follower may break the lease once the leader's published horizon —
// v + request timeout — has passed, so the grace moves inside: the command
// is stopped at v − kill-grace and SIGKILLed at v (killAt); the request
// timeout covers the signal reaching every member. Either way killAt is
// when the supervisor, the guard and the shim SIGKILL.

// killAt is when term's command is SIGKILLed at the latest: the end of its
// leadership as last known, plus kill-grace unless the grace comes before
// it (graceInside). Zero when the end is unknown.
func (s *supervisor) killAt(term int64) time.Time { return s.killAfter(s.validUntil(term)) }

// killAfter is killAt for a leadership that ends at until (zero: unknown).
func (s *supervisor) killAfter(until time.Time) time.Time {
	if until.IsZero() || s.o.graceInside() {
		return until
	}
	return until.Add(s.o.killGrace)
}

// stopAt is when term's command gets its polite signal at the latest:
// kill-grace before killAt. Zero when the end is unknown.
func (s *supervisor) stopAt(term int64) time.Time {
	if at := s.killAt(term); !at.IsZero() {
		return at.Add(-s.o.killGrace)
	}
	return time.Time{}
}

// stop ends the group for cause: SIGTERM (or the operator's signal on a
// shutdown) and SIGCONT, a grace, then SIGKILL; it returns once the group is
// reaped, or with ErrSurvived / ErrOutOfReach (never later than the grace
// plus supervise.KillTimeout, plus supervise.DyingTimeout while what is
// left only waits for the CPU).
func (s *supervisor) stop(g *supervise.Group, term int64, cause string) error {
	sig, want := syscall.SIGTERM, s.o.killGrace
	if cause == history.CauseShutdown {
		_, sig = s.stopping()
		want = s.o.shutdownGrace
	}
	return g.Stop(sig, s.grace(term, want))
}

// grace is how long the group may take to act on the polite signal: want,
// but never past killAt. So the group is SIGKILLed by killAt whatever
// stopped it and however late, and reaped KillTimeout later at most
// (validateRun). Zero or less means SIGKILL at once.
func (s *supervisor) grace(term int64, want time.Duration) time.Duration {
	at := s.killAt(term)
	if at.IsZero() {
		return want
	}
	return min(want, time.Until(at))
}

// killBy is the instant the guard and the shim kill term's group unless
// extended: killAt, the moment the supervisor itself would SIGKILL. Their
// kill is then reaped within KillTimeout, inside the budget validateRun
// checks. Zero (no deadline) when the end is unknown.
func (s *supervisor) killBy(term int64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killByLocked(term)
}

func (s *supervisor) killByLocked(term int64) time.Time {
	if s.term != term || s.until.IsZero() {
		return time.Time{}
	}
	return s.killAfter(s.until)
}
