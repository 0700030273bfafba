//go:build negativecontrol

package main

import (
	"flag"

	"github.com/blobleader/blobleader/worker/election"
)

// This file is compiled only into the chaos suite's negative-control binary
// (go build -tags negativecontrol): the one build in which a worker can be
// told to keep claiming leadership after losing it.

func (o *options) registerNegativeControl(fs *flag.FlagSet) {
	fs.BoolVar(&o.unsafe, unsafeFlag, false, "negative control for the chaos suite: keep claiming leadership after losing the lease")
}

// refuseNegativeControl: this build has the control; nothing to refuse.
func (o *options) refuseNegativeControl() error { return nil }

func (o *options) applyNegativeControl(c *election.Config) {
	if o.unsafe {
		election.EnableUnsafeNoStepDown(c)
	}
}
