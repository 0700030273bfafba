package chaos

import (
	"context"
	"fmt"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// JobStop sends a job-control stop signal to a `blobleader run` supervisor
// alone, as a terminal does on ^Z (SIGTSTP) or on a background read
// (SIGTTIN) or write (SIGTTOU): the command is in a process group of its
// own, so only the supervisor gets it. Its default action stops the
// process; a supervisor must not be stopped by it while its command runs
// on. Remove sends SIGCONT (a no-op for a supervisor that did not stop).
type JobStop struct {
	Signal  string  `json:"signal"` // "SIGTSTP" (default), "SIGTTIN" or "SIGTTOU"
	Process Process `json:"-"`      // the supervisor

	mu     sync.Mutex
	target string
	active bool
}

var _ Fault = (*JobStop)(nil)

func (f *JobStop) Kind() Kind { return KindJobStop }

// Target is the name of the signalled supervisor.
func (f *JobStop) Target() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.target != "" || f.Process == nil {
		return f.target
	}
	return f.Process.Name()
}

func (f *JobStop) signal() (syscall.Signal, error) {
	switch name := f.Signal; name {
	case "", "SIGTSTP", "SIGTTIN", "SIGTTOU":
		if name == "" {
			name = "SIGTSTP"
		}
		return unix.SignalNum(name), nil
	default:
		return 0, fmt.Errorf("%w: JobStop.Signal %q: want SIGTSTP, SIGTTIN or SIGTTOU", ErrInvalid, name)
	}
}

// Inject delivers the signal. It does not wait for a stop: whether the
// supervisor stops is what the fault shows.
func (f *JobStop) Inject(ctx context.Context) error {
	sig, err := f.signal()
	if err != nil {
		return err
	}
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
	if err := f.Process.Signal(sig); err != nil {
		return err
	}
	f.active = true
	return nil
}

// Remove sends SIGCONT; a supervisor that exited meanwhile counts as
// removed.
func (f *JobStop) Remove(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		return nil
	}
	f.active = false
	if running(f.Process) != nil {
		return nil
	}
	if err := f.Process.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	return waitState(ctx, f.Process, false)
}
