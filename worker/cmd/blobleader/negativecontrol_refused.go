//go:build !negativecontrol

package main

import (
	"flag"

	"github.com/blobleader/blobleader/worker/election"
)

// A shipped binary has no negative control, but it does not ignore a request
// for one either: an operator who set the flag or its env twin expected a
// different binary, so it refuses to start (exit 2) and says which build has it.

// refusedFlag accepts any value (so that --unsafe-no-step-down=false and an
// empty env twin are refused too, not reported as syntax errors) and records
// that it was given.
type refusedFlag struct{ given *bool }

func (f refusedFlag) String() string   { return "" }
func (f refusedFlag) IsBoolFlag() bool { return true }
func (f refusedFlag) Set(string) error { *f.given = true; return nil }

func (o *options) registerNegativeControl(fs *flag.FlagSet) {
	fs.Var(refusedFlag{&o.unsafeAsked}, unsafeFlag, "refused: the negative control exists only in binaries built with -tags negativecontrol")
}

func (o *options) refuseNegativeControl() error {
	if o.unsafeAsked {
		return usagef("--%s (or %s) is refused: the negative control exists only in binaries built with -tags negativecontrol",
			unsafeFlag, envName(unsafeFlag))
	}
	return nil
}

func (o *options) applyNegativeControl(*election.Config) {}
