package chaos

import (
	"context"

	"github.com/blobleader/blobleader/worker/supervise"
)

// GuardStop SIGSTOPs the group guard of a `blobleader run` supervisor alone,
// as a debugger attaching to it, or an operator's `kill -STOP` of the wrong
// pid, would; the supervisor, its shim and its command run on (the shim
// still holds the deadline). A stopped guard reads nothing: whether the
// group's end — a crash, a stop, a SIGTERM to the supervisor — still
// completes, and the lease is still released at once, is what the fault
// shows. Remove continues it with SIGCONT (one that is gone counts as
// continued).
type GuardStop struct {
	Process Process `json:"-"` // the supervisor (must implement PIDProcess)
	Guard   int     `json:"guard_pid"`

	state signalled
}

var (
	_ Fault         = (*GuardStop)(nil)
	_ ProcessTarget = (*GuardStop)(nil)
)

func (f *GuardStop) SetProcess(p Process) { f.Process = p }

func (f *GuardStop) Kind() Kind { return KindGuardStop }

// Target is the name of the supervisor whose guard is stopped.
func (f *GuardStop) Target() string { return f.state.name(f.Process) }

// Inject SIGSTOPs the supervisor's guard and returns once it is stopped.
func (f *GuardStop) Inject(ctx context.Context) error {
	return f.state.stopHelper(ctx, f.Process, supervise.GuardName, "stop guard", &f.Guard)
}

// Remove continues the guard (one that is gone meanwhile counts as
// continued) and returns once it runs.
func (f *GuardStop) Remove(ctx context.Context) error {
	return f.state.continueHelper(ctx, f.Guard)
}
