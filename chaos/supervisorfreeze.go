package chaos

import (
	"context"
	"sync"
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

	mu     sync.Mutex
	target string
	active bool
}

var _ Fault = (*SupervisorFreeze)(nil)

func (f *SupervisorFreeze) Kind() Kind { return KindSupervisorFreeze }

// Target is the name of the frozen supervisor.
func (f *SupervisorFreeze) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.target != "" || f.Process == nil {
		return f.target
	}
	return f.Process.Name()
}

// Inject sends SIGSTOP to the supervisor's pid and, where the state can be
// read, returns once it is stopped.
func (f *SupervisorFreeze) Inject(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active {
		return ErrInjected
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := running(f.Process); err != nil {
		return err
	}
	f.target = f.Process.Name()
	if err := f.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	f.active = true
	return waitState(ctx, f.Process, true)
}

// Remove sends SIGCONT and returns once the supervisor runs again; one that
// exited meanwhile counts as removed.
func (f *SupervisorFreeze) Remove(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		return nil
	}
	if running(f.Process) != nil {
		f.active = false
		return nil
	}
	if err := f.Process.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	if err := waitState(ctx, f.Process, false); err != nil {
		return err
	}
	f.active = false
	return nil
}
