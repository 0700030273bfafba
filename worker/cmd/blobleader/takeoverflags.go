package main

import (
	"flag"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/supervise"
)

// The early-takeover flags (docs/failover.md#early-takeover), shared by the
// worker and `run`.
type takeoverOptions struct {
	takeoverAfter time.Duration
	breakPeriod   time.Duration
}

func (t *takeoverOptions) register(fs *flag.FlagSet) {
	fs.DurationVar(&t.takeoverAfter, "takeover-after", 0, "early takeover: break the lease of a leader whose heartbeat a follower reads unchanged for this long (0: off, wait out the lease); ≥ 2 × renew-interval, and with --break-period below lease-duration")
	fs.DurationVar(&t.breakPeriod, "break-period", 0, "early takeover's break period, whole seconds ≤ 60s; ≥ renew-deadline + request timeout + 1.5s (a 500ms clock margin, and 1s because storage counts break periods in whole seconds; + kill-grace + 1s under run); 0: the shortest that rule allows")
}

func (t takeoverOptions) apply(c *election.Config) {
	c.TakeoverAfter, c.BreakPeriod = t.takeoverAfter, t.breakPeriod
}

// runStopAfterDeadline is how long after its deadline a supervisor's
// command may still run: the kill grace, then SIGKILL and the reap.
func runStopAfterDeadline(killGrace time.Duration) time.Duration {
	return killGrace + supervise.KillTimeout
}

// validateTakeover applies the break-period rule with the command's kill
// grace counted in: under run, what the leader started is dead only
// kill-grace + the kill timeout after its deadline.
func (o *runOptions) validateTakeover() error {
	c := o.electionConfig()
	c.StopAfterDeadline = runStopAfterDeadline(o.killGrace)
	if err := c.Validate(); err != nil {
		return configUsage(err)
	}
	return nil
}
