//go:build !negativecontrol

package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/blobleader/blobleader/worker/election"
)

// The options a shipped binary has beyond the shared ones: none. It still
// knows the test-only build's flag, so as not to ignore a request for it: an
// operator who set the flag or its env twin expected a different binary, so
// it refuses to start (exit 2) and says which build has it.

// The test-only build's flags, refused here and not listed.
const (
	unsafeFlag     = "unsafe-no-step-down"
	earlyBreakFlag = "unsafe-early-break"
)

// buildOptions records whether a refused flag was given.
type buildOptions struct {
	asked, askedEarly bool
}

// refusedFlag accepts any value (so that --unsafe-no-step-down=false and an
// empty env twin are refused too, not reported as syntax errors) and records
// that it was given.
type refusedFlag struct{ given *bool }

func (f refusedFlag) String() string   { return "" }
func (f refusedFlag) IsBoolFlag() bool { return true }
func (f refusedFlag) Set(string) error { *f.given = true; return nil }

func (b *buildOptions) register(fs *cmdFlags) {
	fs.Var(refusedFlag{&b.asked}, unsafeFlag, "refused: the negative control exists only in binaries built with -tags negativecontrol")
	fs.hide(unsafeFlag)
	fs.Var(refusedFlag{&b.askedEarly}, earlyBreakFlag, "refused: the negative control exists only in binaries built with -tags negativecontrol")
	fs.hide(earlyBreakFlag)
}

func (b *buildOptions) check() error {
	for _, f := range []struct {
		asked bool
		name  string
	}{{b.asked, unsafeFlag}, {b.askedEarly, earlyBreakFlag}} {
		if f.asked {
			return usagef("--%s (or %s) is refused: the negative control exists only in binaries built with -tags negativecontrol",
				f.name, envName(f.name))
		}
	}
	return nil
}

// configure leaves c as the flags made it.
func (b *buildOptions) configure(*election.Config) {}

// announce has nothing to announce.
func (b *buildOptions) announce(*slog.Logger) {}

// task is the leader task as it was written.
func (b *buildOptions) task(run func(ctx context.Context, term int64) error, _ time.Duration) func(ctx context.Context, term int64) error {
	return run
}
