//go:build negativecontrol

package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/blobleader/blobleader/worker/election"
	"github.com/blobleader/blobleader/worker/ledger"
)

// This file is compiled only into the chaos suite's negative-control binary
// (go build -tags negativecontrol): the one build in which a worker can be
// told to keep claiming leadership after losing it, or to break a leader's
// lease too early. Every other build compiles buildoptions.go in its place.

// The negative controls' flags, not listed; every other build refuses them.
const (
	unsafeFlag     = "unsafe-no-step-down"
	earlyBreakFlag = "unsafe-early-break"
)

// buildOptions are the options only this build has.
type buildOptions struct {
	unsafe     bool // --unsafe-no-step-down
	earlyBreak bool // --unsafe-early-break
}

func (b *buildOptions) register(fs *cmdFlags) {
	fs.BoolVar(&b.unsafe, unsafeFlag, false, "negative control for the chaos suite: keep claiming leadership after losing the lease")
	fs.hide(unsafeFlag)
	fs.BoolVar(&b.earlyBreak, earlyBreakFlag, false, "negative control for the chaos suite: break a leader's lease long before its published horizon has passed")
	fs.hide(earlyBreakFlag)
}

// check: this build has the control; nothing to refuse.
func (b *buildOptions) check() error { return nil }

// configure makes c's leader keep claiming after its deadline or a definite
// loss (election.EnableUnsafeNoStepDown), or c's follower break too early
// (election.EnableUnsafeEarlyBreak); shard electors inherit it.
func (b *buildOptions) configure(c *election.Config) {
	if b.unsafe {
		election.EnableUnsafeNoStepDown(c)
	}
	if b.earlyBreak {
		election.EnableUnsafeEarlyBreak(c)
	}
}

func (b *buildOptions) announce(log *slog.Logger) {
	if b.unsafe {
		log.Warn("UNSAFE: --unsafe-no-step-down is set; this worker keeps claiming leadership after losing it (negative control only)")
	}
	if b.earlyBreak {
		log.Warn("UNSAFE: --unsafe-early-break is set; this worker breaks leaders' leases before they have stopped (negative control only)")
	}
}

// task is the leader task as this worker runs it. An unsafe worker's task
// also ignores the ledger's fence: where the reference task hands leadership
// on, it writes again one tick later, for as long as its context lives.
func (b *buildOptions) task(run func(ctx context.Context, term int64) error, tick time.Duration) func(ctx context.Context, term int64) error {
	if !b.unsafe {
		return run
	}
	return func(ctx context.Context, term int64) error {
		// It also reports progress every tick whatever lands, so its own
		// watchdog never deposes it: the control keeps claiming.
		go func() {
			t := time.NewTicker(tick)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					election.Progress(ctx)
				}
			}
		}()
		for {
			err := run(ctx, term)
			if ctx.Err() != nil || !errors.Is(err, ledger.ErrFenced) {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(tick):
			}
		}
	}
}
