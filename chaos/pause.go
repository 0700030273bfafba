package chaos

import (
	"context"
	"sync"
	"syscall"
)

// Pause freezes a worker with SIGSTOP (a long GC pause, a frozen VM) and
// Remove thaws it with SIGCONT. Its clocks keep running while it is frozen, so
// on resume it must notice that its deadline has passed before acting.
type Pause struct {
	Process Process `json:"-"`

	mu     sync.Mutex
	target string
	active bool
}

var _ Fault = (*Pause)(nil)

func (f *Pause) Kind() Kind { return KindPause }

// Target is the name of the paused process.
func (f *Pause) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.target != "" {
		return f.target
	}
	if f.Process == nil {
		return ""
	}
	return f.Process.Name()
}

// Inject sends SIGSTOP and, where the state can be read, returns once the
// process is stopped.
func (f *Pause) Inject(ctx context.Context) error {
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

// Remove sends SIGCONT and returns once the process runs again. A process
// that exited meanwhile counts as removed.
func (f *Pause) Remove(ctx context.Context) error {
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
