package chaos

import (
	"context"

	"github.com/blobleader/blobleader/worker/supervise"
)

// ShimStop SIGSTOPs the command shim of a `blobleader run` supervisor alone,
// as a debugger attaching to it, or an operator's `kill -STOP` of the wrong
// pid, would; the supervisor and the command run on. A stopped shim reaps
// nothing and reports nothing: whether the supervisor still learns that its
// command ended (it crashes meanwhile, or the supervisor is told to stop)
// is what the fault shows. Remove continues it with SIGCONT.
type ShimStop struct {
	Process Process `json:"-"` // the supervisor (must implement PIDProcess)
	Shim    int     `json:"shim_pid"`

	state signalled
}

var (
	_ Fault         = (*ShimStop)(nil)
	_ ProcessTarget = (*ShimStop)(nil)
)

func (f *ShimStop) SetProcess(p Process) { f.Process = p }

func (f *ShimStop) Kind() Kind { return KindShimStop }

// Target is the name of the supervisor whose shim is stopped.
func (f *ShimStop) Target() string { return f.state.name(f.Process) }

// Inject SIGSTOPs the supervisor's shim and returns once it is stopped.
func (f *ShimStop) Inject(ctx context.Context) error {
	return f.state.stopHelper(ctx, f.Process, supervise.ShimName, "stop shim", &f.Shim)
}

// Remove continues the shim (one that is gone meanwhile counts as
// continued) and returns once it runs.
func (f *ShimStop) Remove(ctx context.Context) error {
	return f.state.continueHelper(ctx, f.Shim)
}
