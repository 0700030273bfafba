//go:build negativecontrol

package election

import (
	"errors"
	"time"

	"github.com/blobleader/blobleader/worker/election/lease"
)

// This file replaces claim.go in the chaos suite's negative-control build
// (go build -tags negativecontrol): the one build in which a leader can be
// told to keep claiming leadership after losing it, or a follower to break
// a lease too early, so the suite can prove that its checker catches an
// unsafe elector. A production build has no way to disable safety.

// claimRule is claim.go's rule, unless noStepDown or earlyBreak switches a
// negative control on.
type claimRule struct{ noStepDown, earlyBreak bool }

// unbounded is how far an unsafe claim outlasts its renew deadline: longer
// than any run.
const unbounded = 100 * 365 * 24 * time.Hour

func (r claimRule) until(deadline time.Time) time.Time {
	if r.noStepDown {
		return deadline.Add(unbounded)
	}
	return deadline
}

// reported: an unsafe claim has no bound to publish.
func (r claimRule) reported(t time.Time) time.Time {
	if r.noStepDown {
		return time.Time{}
	}
	return t
}

func (r claimRule) ends(err error) bool { return !r.noStepDown && errors.Is(err, lease.ErrLost) }

// breakAfter: an early breaker waits a third of the holder's heartbeat gap
// (a renew interval on the fast profile) instead of its stop horizon, so it
// breaks leaders that are frozen, slow, or simply between two heartbeats.
func (r claimRule) breakAfter(safe time.Duration, rec lease.Record) time.Duration {
	if r.earlyBreak {
		return rec.BeatEvery / 3
	}
	return safe
}

// EnableUnsafeNoStepDown switches on the negative control in c: a leader
// built from it ignores its renew deadline and definite lease losses, keeps
// claiming leadership, and publishes no ValidUntil.
func EnableUnsafeNoStepDown(c *Config) { c.claim.noStepDown = true }

// EnableUnsafeEarlyBreak switches on the early-break negative control in c:
// a follower built from it breaks a holder's lease once the holder's record
// has been unchanged for a third of its heartbeat gap, long before the
// holder has stopped (docs/failover.md#early-takeover).
func EnableUnsafeEarlyBreak(c *Config) { c.claim.earlyBreak = true }
