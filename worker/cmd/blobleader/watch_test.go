package main

import (
	"testing"
	"time"
)

// The kill-grace policy (watch.go): without early takeover the command is
// stopped at the end of its leadership and SIGKILLed kill-grace later, as
// the lease's margin allows; with it, a follower may break the lease once
// the leader's horizon has passed, so the command is stopped kill-grace
// before the end and SIGKILLed at the end — by the supervisor, and by the
// guard and the shim (killBy) if the supervisor cannot.
func TestRun_KillGraceComesBeforeTheEndWithEarlyTakeover(t *testing.T) {
	const grace = time.Second
	for _, tc := range []struct {
		name           string
		takeoverAfter  time.Duration
		stopAt, killAt time.Duration // from the end of leadership
	}{
		{"lease only", 0, 0, grace},
		{"early takeover", 2250 * time.Millisecond, -grace, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := time.Now().Add(5 * time.Second)
			s := &supervisor{o: &runOptions{killGrace: grace, options: options{takeover: takeoverOptions{takeoverAfter: tc.takeoverAfter}}}, term: 7, until: end}
			if got := s.stopAt(7).Sub(end); got != tc.stopAt {
				t.Errorf("stopAt = end %+v, want end %+v", got, tc.stopAt)
			}
			if got := s.killAt(7).Sub(end); got != tc.killAt {
				t.Errorf("killAt = end %+v, want end %+v", got, tc.killAt)
			}
			// The guard's deadline is killAt itself; the clamped grace is a
			// duration from now: compare it with what is left until killAt.
			if got := s.killBy(7); !got.Equal(s.killAt(7)) {
				t.Errorf("killBy = %v, want killAt %v", got, s.killAt(7))
			}
			left := time.Until(end.Add(tc.killAt))
			if d := s.grace(7, time.Minute) - left; d < -50*time.Millisecond || d > 50*time.Millisecond {
				t.Errorf("grace(1m) = %v, want clamped to about %v (killAt)", s.grace(7, time.Minute), left)
			}
			if !s.killAt(8).IsZero() || !s.killBy(8).IsZero() {
				t.Errorf("another term's end is unknown: killAt %v, killBy %v", s.killAt(8), s.killBy(8))
			}
		})
	}
}
