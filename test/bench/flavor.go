package bench

import (
	"time"

	"github.com/blobleader/blobleader/test/checker"
	"github.com/blobleader/blobleader/test/cluster"
	"github.com/blobleader/blobleader/worker/election"
)

// Flavor is one parameter set and the binary that runs it.
type Flavor struct {
	Name   string // "ours" or "sample": file and job names
	Label  string // for tables
	Binary string
	Params cluster.Params
	Args   []string // more worker flags (a flavor whose binary has flags Params cannot say)
}

// Ours is the worker with its default timings (tick 1 s and shutdown grace
// 5 s as the worker's flags default them).
func Ours(bin string) Flavor {
	return Flavor{Name: "ours", Label: "blobleader (L 15 s, D 10 s, renew 2 s, P 1 s)", Binary: bin, Params: cluster.Params{
		Timing: election.DefaultTiming(), Tick: time.Second, ShutdownGrace: 5 * time.Second,
	}}
}

// Sample is cmd/sampleworker with the Azure Architecture Center sample's
// parameters. RenewDeadline is set to L only so the checker reads the
// sample's history right (it writes valid_until = renew send + L and has no
// deadline of its own); the binary ignores it.
func Sample(bin string) Flavor {
	return Flavor{Name: "sample", Label: "AAC sample (L 15 s, renew 10 s, acquire retry 20 s)", Binary: bin, Params: cluster.Params{
		Timing: election.Timing{
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 15 * time.Second,
			RenewInterval: 10 * time.Second,
			RetryPeriod:   20 * time.Second,
		},
		Tick:          time.Second,
		ShutdownGrace: 5 * time.Second,
	}}
}

// crashBound is the L1 bound after a crash
// (docs/failover.md#liveness-how-long-until-a-new-leader), counted from the
// last successful renew: L + 1.1·P.
func (f Flavor) crashBound() time.Duration {
	return f.Params.LeaseDuration + f.Params.RetryPeriod*11/10
}

// assertedCrashBound is the crash bound the checker asserts and the README
// states: crashBound plus the checker's ε for the acquire's own work.
func (f Flavor) assertedCrashBound() time.Duration {
	return f.crashBound() + checker.DefaultParams().Epsilon
}

// gracefulBound is L1 after a graceful stop, counted from the release: 1.1·P.
func (f Flavor) gracefulBound() time.Duration { return f.Params.RetryPeriod * 11 / 10 }

// livenessWindow is long enough for a contending worker to touch storage.
func (f Flavor) livenessWindow() time.Duration {
	return max(f.Params.RenewInterval, f.Params.RetryPeriod) + 2*time.Second
}
