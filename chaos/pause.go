package chaos

import (
	"context"
	"syscall"
)

// Pause freezes a worker with SIGSTOP (a long GC pause, a frozen VM) and
// Remove thaws it with SIGCONT. Its clocks keep running while it is frozen, so
// on resume it must notice that its deadline has passed before acting.
type Pause struct {
	Process Process `json:"-"`

	stop signalled
}

var (
	_ Fault         = (*Pause)(nil)
	_ ProcessTarget = (*Pause)(nil)
)

func (f *Pause) SetProcess(p Process) { f.Process = p }

func (f *Pause) Kind() Kind { return KindPause }

// Target is the name of the paused process.
func (f *Pause) Target() string { return f.stop.name(f.Process) }

// Inject sends SIGSTOP and, where the state can be read, returns once the
// process is stopped.
func (f *Pause) Inject(ctx context.Context) error {
	return f.stop.send(ctx, f.Process, syscall.SIGSTOP, stopped(f.Process))
}

// Remove sends SIGCONT and returns once the process runs again. A process
// that exited meanwhile counts as removed.
func (f *Pause) Remove(ctx context.Context) error {
	return f.stop.cont(ctx, f.Process, false)
}
