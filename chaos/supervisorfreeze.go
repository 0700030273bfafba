package chaos

import (
	"context"
	"syscall"
)

// SupervisorFreeze freezes a `blobleader run` supervisor alone with SIGSTOP
// to its pid (not its process group: its command, in a group of its own,
// runs on), as a debugger, a swap storm or a ^Z would. Remove thaws it with
// SIGCONT. Held longer than the lease, it shows whether the leadership's
// deadline outlives the frozen supervisor: the command must be dead before
// the lease can expire at storage.
type SupervisorFreeze struct {
	Process Process `json:"-"` // the supervisor

	stop signalled
}

var (
	_ Fault         = (*SupervisorFreeze)(nil)
	_ ProcessTarget = (*SupervisorFreeze)(nil)
)

func (f *SupervisorFreeze) SetProcess(p Process) { f.Process = p }

func (f *SupervisorFreeze) Kind() Kind { return KindSupervisorFreeze }

// Target is the name of the frozen supervisor.
func (f *SupervisorFreeze) Target() string { return f.stop.name(f.Process) }

// Inject sends SIGSTOP to the supervisor's pid and, where the state can be
// read, returns once it is stopped.
func (f *SupervisorFreeze) Inject(ctx context.Context) error {
	return f.stop.send(ctx, f.Process, syscall.SIGSTOP, stopped(f.Process))
}

// Remove sends SIGCONT and returns once the supervisor runs again; one that
// exited meanwhile counts as removed.
func (f *SupervisorFreeze) Remove(ctx context.Context) error {
	return f.stop.cont(ctx, f.Process, false)
}
