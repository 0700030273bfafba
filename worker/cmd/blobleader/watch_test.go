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
			// The guard's deadline and the clamped grace are durations from
			// now: compare them with what is left until killAt.
			left := time.Until(end.Add(tc.killAt))
			if d := s.killBy(7) - left; d < -50*time.Millisecond || d > 50*time.Millisecond {
				t.Errorf("killBy = %v, want about %v (killAt)", s.killBy(7), left)
			}
			if d := s.grace(7, time.Minute) - left; d < -50*time.Millisecond || d > 50*time.Millisecond {
				t.Errorf("grace(1m) = %v, want clamped to about %v (killAt)", s.grace(7, time.Minute), left)
			}
			if s.killAt(8) != (time.Time{}) || s.killBy(8) != 0 {
				t.Errorf("another term's end is unknown: killAt %v, killBy %v", s.killAt(8), s.killBy(8))
			}
		})
	}
}
